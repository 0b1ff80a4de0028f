"""Notebook 09's sampling: the probabilities equal a plain reference on many seeded cases
(ties included), the limits behave (top_p=1, a tiny top_p, top_k=1, temperatures near 0
and very large), draws follow the probabilities and come from the caller's generator
only, inputs are never changed, and bad input is explained."""

import math
import random

import pytest
import torch

from helpers.gpt.sampling import choose_next_token, next_token_probabilities
from helpers.threads import one_thread
from tests.errors import assert_error_names

BOUNDARY = 1e-5  # cases whose top-p decision is this close to top_p are left out


@pytest.fixture(autouse=True)
def on_one_thread():
    """Tiny tensors: a second thread only slows them down on a busy machine."""
    with one_thread():
        yield


def reference_probabilities(row, temperature, top_k, top_p):
    """One row of logits (a list of floats), written out with Python floats: returns the
    probabilities and how close the closest top-p decision came to top_p."""
    V = len(row)
    best = max(row)
    if temperature == 0:
        first = row.index(best)
        return [1.0 if i == first else 0.0 for i in range(V)], math.inf
    ranked = sorted(range(V), key=lambda i: (-row[i], i))  # likeliest first, ties by id
    if top_k is not None:
        ranked = ranked[:top_k]
    weight = {i: math.exp((row[i] - best) / temperature) for i in ranked}
    closest = math.inf
    if top_p is not None and top_p < 1:
        total = sum(weight.values())
        kept, mass = [], 0.0
        for i in ranked:  # the smallest set, likeliest first, whose mass reaches top_p
            closest = min(closest, abs(mass - top_p))
            if mass >= top_p:
                break
            kept.append(i)
            mass += weight[i] / total
        ranked = kept
    total = sum(weight[i] for i in ranked)
    return [weight[i] / total if i in ranked else 0.0 for i in range(V)], closest


def random_cases(count=600, seed=0):
    """(logits (B, V), temperature, top_k, top_p): sizes, ties (logits rounded to a few
    values), blocked tokens (-inf) and settings drawn at a fixed seed."""
    draw = random.Random(seed)
    cases = []
    for _ in range(count):
        B, V = draw.randint(1, 3), draw.randint(1, 12)
        logits = torch.randn(B, V, generator=torch.Generator().manual_seed(draw.randrange(10**6)))
        logits = logits * draw.choice([0.5, 2.0, 6.0])
        if draw.random() < 0.4:
            logits = logits.round()  # ties
        if V > 1 and draw.random() < 0.2:
            logits[:, draw.randrange(V)] = -math.inf  # a token that can never be chosen
        temperature = draw.choice([0, 0.05, 0.3, 1, 1, 2.5])
        top_k = draw.choice([None, None, 1, 2, 3, 5, 50])
        top_p = draw.choice([None, None, 0.1, 0.5, 0.9, 1.0, round(draw.random(), 3) or 0.5])
        cases.append((logits, temperature, top_k, top_p))
    return cases


def test_the_probabilities_equal_a_plain_reference_on_many_random_cases():
    compared = skipped = 0
    for logits, temperature, top_k, top_p in random_cases():
        ours = next_token_probabilities(logits, temperature=temperature, top_k=top_k,
                                        top_p=top_p)
        assert ours.shape == logits.shape and ours.dtype == logits.dtype
        rows = [reference_probabilities(row, temperature, top_k, top_p) for row in logits.tolist()]
        expected = torch.tensor([probabilities for probabilities, _ in rows])
        # float32 and float64 may decide a top-p boundary this close either way
        clear = torch.tensor([closest >= BOUNDARY for _, closest in rows])
        compared, skipped = compared + int(clear.sum()), skipped + int((~clear).sum())
        case = (logits, temperature, top_k, top_p)
        assert torch.equal(ours[clear] > 0, expected[clear] > 0), case
        torch.testing.assert_close(ours[clear], expected[clear], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(ours.sum(dim=-1), torch.ones(len(rows)))
    assert compared > 900 and skipped < compared / 50, (compared, skipped)


def test_ties_go_to_the_lower_token_id():
    logits = torch.tensor([1.0, 3.0, 3.0, 3.0, 2.0])
    for top_k, kept in [(1, [1]), (2, [1, 2]), (3, [1, 2, 3])]:
        probabilities = next_token_probabilities(logits, top_k=top_k)
        assert (probabilities > 0).nonzero().flatten().tolist() == kept
    # each of the three tied tokens holds about 0.3 of the probability
    probabilities = next_token_probabilities(logits, top_p=0.35)
    assert (probabilities > 0).nonzero().flatten().tolist() == [1, 2]
    assert choose_next_token(logits).item() == 1 == logits.argmax().item()


def test_top_p_1_keeps_every_token_even_those_that_round_to_nothing():
    logits = torch.tensor([[30.0, 0.0, -5.0, 1.0], [0.0, 0.0, 0.0, 0.0]])  # 1e-13 and less
    for temperature in (0.5, 1, 3):
        assert torch.equal(next_token_probabilities(logits, temperature=temperature, top_p=1.0),
                           next_token_probabilities(logits, temperature=temperature))
    torch.testing.assert_close(next_token_probabilities(logits)[1], torch.full((4,), 0.25))


def test_a_tiny_top_p_or_top_k_1_keeps_only_the_argmax_which_sampling_then_always_draws():
    logits = torch.randn(50, 9, generator=torch.Generator().manual_seed(0)).round()  # ties
    argmax = logits.argmax(dim=-1)  # the first of tied maxima
    one_hot = torch.nn.functional.one_hot(argmax, 9).float()
    for setting in ({"top_p": 1e-6}, {"top_k": 1}, {"top_k": 1, "top_p": 0.3}):
        assert torch.equal(next_token_probabilities(logits, **setting), one_hot), setting
        generator = torch.Generator().manual_seed(1)
        drawn = choose_next_token(logits, temperature=1.5, generator=generator, **setting)
        assert torch.equal(drawn, choose_next_token(logits)), setting  # greedy
    assert torch.equal(choose_next_token(logits), argmax[:, None])


def test_top_k_at_least_the_vocabulary_keeps_every_token():
    logits = torch.randn(4, 7, generator=torch.Generator().manual_seed(2))
    for top_k in (7, 8, 1000):
        assert torch.equal(next_token_probabilities(logits, top_k=top_k),
                           next_token_probabilities(logits))
    torch.testing.assert_close(next_token_probabilities(logits), torch.softmax(logits, dim=-1))


def test_temperature_near_zero_is_greedy_and_large_is_nearly_uniform():
    logits = torch.randn(6, 10, generator=torch.Generator().manual_seed(3)) * 4
    greedy = torch.nn.functional.one_hot(logits.argmax(dim=-1), 10).float()
    assert torch.equal(next_token_probabilities(logits, temperature=0), greedy)
    assert torch.equal(next_token_probabilities(logits, temperature=1e-6), greedy)
    assert torch.equal(next_token_probabilities(logits, temperature=1e-30), greedy)  # no overflow
    spreads = [(next_token_probabilities(logits, temperature=t) - 0.1).abs().max().item()
               for t in (1, 10, 100, 1e6)]
    assert spreads == sorted(spreads, reverse=True) and spreads[-1] < 1e-5, spreads
    # temperature 1 leaves the softmax as it is; 0.5 sharpens it as the logits doubled
    torch.testing.assert_close(next_token_probabilities(logits, temperature=0.5),
                               torch.softmax(2 * logits, dim=-1))


def test_greedy_needs_no_generator_and_sampling_needs_one():
    logits = torch.tensor([[0.1, 2.0, 0.3]])
    assert choose_next_token(logits).tolist() == [[1]]
    assert choose_next_token(logits, top_k=2, top_p=0.5).tolist() == [[1]]
    assert_error_names(lambda: choose_next_token(logits, temperature=0.7), ValueError,
                       ["temperature=0.7", "generator", "torch.Generator().manual_seed(0)",
                        "reproducible", "global"])


def test_the_same_seed_gives_the_same_tokens_and_the_global_generator_is_untouched():
    logits = torch.randn(8, 16, generator=torch.Generator().manual_seed(4))
    state = torch.get_rng_state()
    draws = [choose_next_token(logits, temperature=1.0, top_p=0.9,
                               generator=torch.Generator().manual_seed(seed))
             for seed in (7, 7, 8)]
    assert torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], draws[2])
    assert torch.equal(torch.get_rng_state(), state)


def test_draws_follow_the_probabilities():
    logits = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -3.0])
    generator = torch.Generator().manual_seed(5)
    n = 20_000
    for setting in ({}, {"temperature": 2.0}, {"top_k": 3}, {"top_p": 0.8},
                    {"temperature": 0.7, "top_k": 4, "top_p": 0.9}):
        settings = {"temperature": 1.0, **setting}
        probabilities = next_token_probabilities(logits, **settings)
        drawn = choose_next_token(logits.expand(n, 6), generator=generator, **settings)
        frequencies = torch.bincount(drawn.flatten(), minlength=6) / n
        # five standard deviations of a frequency over n draws, and a little more
        tolerance = 5 * (probabilities * (1 - probabilities) / n).sqrt() + 1e-3
        assert ((frequencies - probabilities).abs() <= tolerance).all(), setting
        assert (frequencies[probabilities == 0] == 0).all(), setting  # never a left-out token


def test_shapes_any_leading_dimensions_give_ids_with_a_last_dimension_of_one():
    generator = torch.Generator().manual_seed(6)
    for shape in [(5,), (2, 5), (2, 3, 5)]:
        logits = torch.randn(shape, generator=generator)
        for temperature in (0, 1):
            ids = choose_next_token(logits, temperature=temperature, generator=generator)
            assert ids.shape == (*shape[:-1], 1) and ids.dtype == torch.long
        assert next_token_probabilities(logits).shape == shape


def test_a_token_at_minus_infinity_is_never_chosen():
    logits = torch.tensor([0.0, -math.inf, 0.0])
    probabilities = next_token_probabilities(logits, temperature=3.0)
    assert probabilities[1] == 0 and torch.isfinite(probabilities).all()
    drawn = choose_next_token(logits.expand(1000, 3), temperature=5.0,
                              generator=torch.Generator().manual_seed(7))
    assert not (drawn == 1).any()


def test_the_given_logits_are_never_changed():
    logits = torch.randn(3, 9, generator=torch.Generator().manual_seed(8)).round()
    logits[0, 2] = -math.inf
    before = logits.clone()
    for settings in ({}, {"temperature": 0.5, "top_k": 3}, {"top_p": 0.6}, {"temperature": 0}):
        next_token_probabilities(logits, **settings)
        choose_next_token(logits, generator=torch.Generator().manual_seed(0),
                          **{"temperature": 1.0, **settings})
    assert torch.equal(logits, before)


LOGITS = torch.tensor([[0.0, 1.0, 2.0]])


@pytest.mark.parametrize("call, error, words", [
    (lambda: next_token_probabilities(LOGITS, temperature=-1), ValueError,
     ["temperature", ">= 0", "-1"]),
    (lambda: next_token_probabilities(LOGITS, temperature=math.inf), ValueError,
     ["temperature", "finite", "inf"]),
    (lambda: next_token_probabilities(LOGITS, temperature="hot"), TypeError,
     ["temperature", "str"]),
    (lambda: next_token_probabilities(LOGITS, temperature=True), TypeError,
     ["temperature", "bool"]),
    (lambda: next_token_probabilities(LOGITS, top_k=0), ValueError, ["top_k", "0"]),
    (lambda: next_token_probabilities(LOGITS, top_k=2.5), TypeError, ["top_k", "float"]),
    (lambda: next_token_probabilities(LOGITS, top_p=0), ValueError, ["top_p", "(0, 1]", "0"]),
    (lambda: next_token_probabilities(LOGITS, top_p=1.5), ValueError, ["top_p", "1.5"]),
    (lambda: next_token_probabilities(LOGITS, top_p="all"), TypeError, ["top_p", "str"]),
    (lambda: next_token_probabilities(torch.tensor([[1, 2]]), top_k=1), TypeError,
     ["logits", "floating-point", "torch.int64"]),
    (lambda: next_token_probabilities(torch.tensor(1.0)), ValueError,
     ["logits", "at least 1 dimensions", "()"]),
    (lambda: next_token_probabilities(torch.zeros(2, 0)), ValueError, ["logits", "V=0"]),
    (lambda: next_token_probabilities([0.0, 1.0]), TypeError, ["logits", "list"]),
    (lambda: next_token_probabilities(torch.tensor([0.0, math.nan])), ValueError,
     ["logits", "NaN"]),
    (lambda: choose_next_token(torch.tensor([[0.0, 1.0], [-math.inf, -math.inf]])), ValueError,
     ["logits", "every score is -inf"]),
    (lambda: choose_next_token(LOGITS, temperature=1, generator=0), TypeError,
     ["generator", "torch.Generator", "int"]),
    (lambda: choose_next_token(LOGITS, temperature=1, top_p=2,
                               generator=torch.Generator()), ValueError, ["top_p", "2"]),
])
def test_bad_input_is_explained(call, error, words):
    assert_error_names(call, error, words)
