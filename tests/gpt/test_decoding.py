"""Notebook 09's generation loop with any cache and any sampling: greedy equals
generate_with_cache; at the context length, window=C equals the cropped generation with
no cache (Raschka's chapter 5) step for step, a smaller window sees what its docstring
says and reads fewer tokens; the IndexError of a naive continuation is avoided;
context="stop" refuses in time; inputs and the global generator are left alone."""

import pytest
import torch

from helpers.gpt.decoding import generate, generate_cropped
from helpers.gpt.generation import KVCache, forward_with_cache, generate_with_cache
from helpers.gpt.model import TinyGPT
from helpers.gpt.model import generate as generate_08
from helpers.gpt.static_cache import StaticKVCache
from helpers.threads import one_thread
from tests.errors import assert_error_names

TOLERANCE = {"atol": 1e-5, "rtol": 1e-5}  # cached against recomputed logits: rounding
C = 10  # the context length of the small models


@pytest.fixture(autouse=True)
def on_one_thread():
    with one_thread():
        yield


def model_with(context_length=C, seed=0):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyGPT(8, context_length, d_model=16, num_heads=2, num_layers=2).eval()


def random_ids(B, T, seed=0):
    return torch.randint(0, 8, (B, T), generator=torch.Generator().manual_seed(seed))


def assert_no_near_tie(logits):
    """The tokens are not decided by a near tie, which rounding could flip."""
    top_two = logits.topk(2, dim=-1).values
    assert (top_two[..., 0] - top_two[..., 1]).min() > 100 * TOLERANCE["atol"]


def counting_factory():
    """A KVCache factory that counts the caches it builds and the tokens they read."""
    counts = {"caches": 0, "tokens read": 0}

    class CountedCache(KVCache):
        def append(self, layer, keys, values):
            if layer == 0:
                counts["tokens read"] += keys.shape[2]
            return super().append(layer, keys, values)

    def factory():
        counts["caches"] += 1
        return CountedCache()
    return factory, counts


def test_greedy_with_the_default_cache_is_generate_with_cache_to_the_last_bit():
    model = model_with(context_length=64)
    for B, T in [(1, 5), (3, 9)]:
        ids = random_ids(B, T, seed=B)
        written, logits = generate(model, ids, 40)
        expected, expected_logits = generate_with_cache(model, ids, 40)
        assert torch.equal(written, expected) and torch.equal(logits, expected_logits)


def test_the_cropped_generation_is_notebook_08s_generate_past_the_context_length():
    model = model_with()
    ids = random_ids(2, 4)
    written, logits = generate_cropped(model, ids, 3 * C)
    assert written.shape == (2, 4 + 3 * C) and logits.shape == (2, 3 * C, 8)
    assert torch.equal(written, generate_08(model, ids, 3 * C))


@pytest.mark.parametrize("T", [1, 4, C, C + 3])  # a prompt longer than C is cropped too
def test_window_c_equals_the_cropped_generation_step_for_step(T):
    model = model_with(seed=T)
    ids = random_ids(2, T, seed=T)
    new = 3 * C
    written, logits = generate(model, ids, new)
    cropped, cropped_logits = generate_cropped(model, ids, new)
    assert_no_near_tie(cropped_logits)
    assert torch.equal(written, cropped)
    torch.testing.assert_close(logits, cropped_logits, **TOLERANCE)
    # once past the limit every step is a fresh prefill of the last C tokens: the model's
    # own forward on the cropped ids, to the last bit
    past = max(C - T + 1, 0)  # the first step whose next token would need position C
    assert torch.equal(logits[:, past:], cropped_logits[:, past:])


def test_sampling_with_the_cache_draws_what_the_cropped_generation_draws():
    model = model_with(seed=3)
    ids = random_ids(3, 4, seed=3)
    settings = {"temperature": 1.3, "top_k": 6, "top_p": 0.95}
    written, _ = generate(model, ids, 3 * C, generator=torch.Generator().manual_seed(9),
                          **settings)
    cropped, _ = generate_cropped(model, ids, 3 * C,
                                  generator=torch.Generator().manual_seed(9), **settings)
    assert torch.equal(written, cropped)
    again, _ = generate(model, ids, 3 * C, generator=torch.Generator().manual_seed(9),
                        **settings)
    other, _ = generate(model, ids, 3 * C, generator=torch.Generator().manual_seed(10),
                        **settings)
    assert torch.equal(again, written) and not torch.equal(other, written)
    greedy, _ = generate(model, ids, 3 * C)
    assert not torch.equal(written, greedy)  # sampling at 1.3 writes something else


@pytest.mark.parametrize("window", [1, 4, C - 1])
def test_a_smaller_window_sees_the_tokens_since_its_last_restart(window):
    model = model_with(seed=4)
    T, new = 4, 4 * C
    ids = random_ids(2, T, seed=4)
    written, logits = generate(model, ids, new, window=window)
    start = 0  # the first token the current cache read
    expected = []
    with torch.no_grad():
        for step in range(new):
            end = T + step  # the tokens written so far
            if end - start > C:  # the newest token would need position C: restart
                start = end - window
            expected.append(model(written[:, start:end])[:, -1])
    expected = torch.stack(expected, dim=1)  # (B, new, V)
    assert_no_near_tie(expected)
    torch.testing.assert_close(logits, expected, **TOLERANCE)
    # fewer tokens than the cropped generation's C: other logits after the first restart
    _, cropped_logits = generate_cropped(model, written[:, :T], new)
    first_restart = C - T + 1
    gap = (logits[:, first_restart:] - cropped_logits[:, first_restart:]).abs().max()
    assert gap > 0.01


@pytest.mark.parametrize("T, new, window", [(4, 30, C), (4, 30, 5), (4, 30, 1), (10, 25, 7),
                                            (1, 9, 3), (13, 12, 6)])
def test_restarts_come_once_every_c_minus_window_plus_1_steps_and_read_that_many_tokens(
        T, new, window):
    model = model_with()
    factory, counts = counting_factory()
    generate(model, random_ids(1, T), new, cache_factory=factory, window=window)
    first = max(C - T + 1, 0)  # the first step that restarts (step 0 for a long prompt)
    period = C - window + 1
    restarts = 0 if new <= first else 1 + (new - 1 - first) // period
    assert counts["caches"] == 1 + restarts
    # tokens read: the prompt (unless too long), a window at each restart, 1 at other steps
    prompt_read = T if T <= C else 0
    first_steps = 1 if T <= C else 0
    tokens = prompt_read + restarts * window + (new - restarts - first_steps)
    assert counts["tokens read"] == tokens


def test_with_window_c_every_step_past_the_limit_reads_c_tokens_as_the_cropped_one():
    model = model_with()
    factory, counts = counting_factory()
    T, new = 4, 30
    generate(model, random_ids(1, T), new, cache_factory=factory)
    before_limit = C - T + 1  # steps 0 .. C-T: the prompt, then one token each
    assert counts["tokens read"] == T + (before_limit - 1) + (new - before_limit) * C


def test_a_naive_continuation_hits_an_index_error_that_generate_avoids():
    model = model_with()
    ids = random_ids(1, C)
    cache = KVCache()
    with torch.no_grad():
        forward_with_cache(model, ids, cache)  # positions 0 .. C-1: the cache is full
        with pytest.raises(IndexError):
            forward_with_cache(model, ids[:, -1:], cache)  # position C has no embedding
    written, _ = generate(model, ids, 2 * C)
    assert written.shape == (1, 3 * C)


def test_context_stop_refuses_before_any_work_and_allows_exactly_the_positions():
    model = model_with()
    ids = random_ids(2, 4)
    new = C - 4 + 1  # the last token written needs no position
    written, logits = generate(model, ids, new, context="stop")
    assert torch.equal(written, generate_cropped(model, ids, new)[0])
    factory, counts = counting_factory()
    assert_error_names(lambda: generate(model, ids, new + 1, context="stop",
                                        cache_factory=factory), ValueError,
                       ["T=4", f"new_tokens={new + 1}", f"{C + 1} positions",
                        f"context_length={C}", f"at most {new} new tokens", "recompute"])
    assert counts["caches"] == 0  # refused before building anything
    assert_error_names(lambda: generate(model, random_ids(1, C + 1), 1, context="stop"),
                       ValueError, [f"T={C + 1}", f"context_length={C}"])


def test_any_cache_with_append_and_len_works_the_static_one_included():
    model = model_with(seed=5)
    ids = random_ids(2, 3, seed=5)
    written, logits = generate(model, ids, 3 * C)
    static_written, static_logits = generate(
        model, ids, 3 * C, cache_factory=lambda: StaticKVCache.for_model(model, 2))
    assert torch.equal(static_written, written)
    torch.testing.assert_close(static_logits, logits, atol=1e-6, rtol=1e-6)


def test_generation_changes_neither_its_inputs_nor_the_global_generator():
    model = model_with()
    state = {name: value.clone() for name, value in model.state_dict().items()}
    ids = random_ids(2, 5)
    before = ids.clone()
    rng = torch.get_rng_state()
    generate(model, ids, 2 * C, temperature=0.8, generator=torch.Generator().manual_seed(0))
    generate_cropped(model, ids, 2 * C, temperature=0.8, top_p=0.9,
                     generator=torch.Generator().manual_seed(0))
    generate(model, ids, 2 * C, window=3)
    assert torch.equal(ids, before) and torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(state[name], value) for name, value in model.state_dict().items())


PROMPT = torch.tensor([[1, 2, 3]])


@pytest.mark.parametrize("call, error, words", [
    (lambda m: generate(m, PROMPT, 5, temperature=0.9), ValueError,
     ["temperature=0.9", "generator", "reproducible"]),
    (lambda m: generate_cropped(m, PROMPT, 5, temperature=0.9), ValueError,
     ["temperature=0.9", "generator"]),
    (lambda m: generate(m, PROMPT, 5, temperature=-1), ValueError, ["temperature", "-1"]),
    (lambda m: generate(m, PROMPT, 5, top_k=0), ValueError, ["top_k"]),
    (lambda m: generate(m, PROMPT, 5, context="slide"), ValueError,
     ["context", "'recompute'", "'stop'", "'slide'"]),
    (lambda m: generate(m, PROMPT, 5, window=0), ValueError, ["window", "0"]),
    (lambda m: generate(m, PROMPT, 5, window=C + 1), ValueError,
     ["window", f"context_length={C}", str(C + 1)]),
    (lambda m: generate(m, PROMPT, 5, cache_factory=KVCache()), TypeError,
     ["cache_factory", "KVCache"]),
    (lambda m: generate(m, PROMPT, 0), ValueError, ["new_tokens"]),
    (lambda m: generate(m, PROMPT[0], 2), ValueError, ["ids", "(B, T)", "unsqueeze(0)"]),
    (lambda m: generate(m, torch.tensor([[3, 9]]), 2), ValueError, ["vocab_size - 1 = 7", "9"]),
    (lambda m: generate(torch.nn.Linear(2, 2), PROMPT, 2), TypeError, ["TinyGPT", "Linear"]),
    (lambda m: generate_cropped(torch.nn.Linear(2, 2), PROMPT, 2), TypeError, ["TinyGPT"]),
])
def test_bad_input_is_explained(call, error, words):
    assert_error_names(lambda: call(model_with()), error, words)
