"""The repeated-letters data, its letters, and the best loss any honest model can reach."""

import math

import pytest
import torch

from helpers.gpt.data import (
    RepeatTask,
    best_possible_loss,
    decode,
    encode,
    make_batch,
)


def test_batch_shapes_targets_and_periods():
    task = RepeatTask(vocab_size=10, context_length=12, min_period=3, max_period=5)
    inputs, targets, periods = make_batch(task, 64, torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (64, 12) and periods.shape == (64,)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])  # targets: the inputs, one on
    assert set(periods.tolist()) == {3, 4, 5}
    for sequence, target, P in zip(inputs, targets, periods.tolist(), strict=True):
        whole = torch.cat([sequence, target[-1:]])  # (T + 1,)
        assert len(set(whole[:P].tolist())) == P  # a segment of different letters
        assert torch.equal(whole[P:], whole[:-P])  # then repeated
        assert 0 <= whole.min() and whole.max() < 10


def test_batches_come_from_the_generator_alone():
    task = RepeatTask()
    state = torch.get_rng_state()
    first = make_batch(task, 8, torch.Generator().manual_seed(5))
    torch.manual_seed(123)  # the global generator plays no part
    second = make_batch(task, 8, torch.Generator().manual_seed(5))
    third = make_batch(task, 8, torch.Generator().manual_seed(6))
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    assert not torch.equal(first[0], third[0])
    torch.set_rng_state(state)


def test_best_possible_loss_by_hand_one_period():
    # s0 s1 s0 s1: the 2nd letter is one of the 3 unused ones; the rest is certain.
    task = RepeatTask(vocab_size=4, context_length=3, min_period=2, max_period=2)
    assert best_possible_loss(task) == pytest.approx(math.log(3) / 3)


def test_best_possible_loss_by_hand_two_periods():
    task = RepeatTask(vocab_size=4, context_length=4, min_period=2, max_period=3)
    # P = 2: ln 3 (3 unused letters), then ln 2 (the segment ends here: 1 chance in 2), 0, 0.
    # P = 3: ln 3, then ln 4 (no end: 1/2 spread over 2 unused letters), 0 (must end), 0.
    expected = (math.log(3) + math.log(2) + math.log(3) + math.log(4)) / 8
    assert best_possible_loss(task) == pytest.approx(expected)


def test_best_possible_loss_of_one_period_by_hand_and_their_mean_is_the_whole():
    task = RepeatTask(vocab_size=4, context_length=4, min_period=2, max_period=3)
    # as in the test above: P = 2 costs ln 3 + ln 2, P = 3 costs ln 3 + ln 4, over 4 targets
    two = best_possible_loss(task, period=2)
    three = best_possible_loss(task, period=3)
    assert two == pytest.approx((math.log(3) + math.log(2)) / 4)
    assert three == pytest.approx((math.log(3) + math.log(4)) / 4)
    assert (two + three) / 2 == pytest.approx(best_possible_loss(task))


def test_best_possible_loss_is_reached_by_the_ideal_predictor_on_samples():
    task = RepeatTask(vocab_size=6, context_length=8, min_period=2, max_period=4)
    inputs, targets, _ = make_batch(task, 4000, torch.Generator().manual_seed(0))
    periods = range(task.min_period, task.max_period + 1)
    losses = []
    for sequence, target in zip(inputs.tolist(), targets.tolist(), strict=True):
        for t, letter in enumerate(target):
            seen = sequence[: t + 1]
            repeat_at = next((i for i in range(1, len(seen)) if seen[i] == seen[0]), None)
            if repeat_at is not None:  # the period is known: the letter is certain
                losses.append(0.0 if letter == seen[t + 1 - repeat_at] else math.inf)
                continue
            possible = [p for p in periods if p >= len(seen)]
            ends = (len(seen) in possible) / len(possible)
            probability = ends if letter == seen[0] else (1 - ends) / (6 - len(seen))
            losses.append(-math.log(probability))
    assert sum(losses) / len(losses) == pytest.approx(best_possible_loss(task), abs=0.02)


def test_encode_decode_and_repeat():
    assert encode("abc cab").tolist() == [0, 1, 2, 2, 0, 1]
    assert decode(encode("hello")) == "hello"
    assert decode([25, 0]) == "za"


@pytest.mark.parametrize("call, words", [
    (lambda: encode("Hi!"), ["a-z", "'!H'", "'Hi!'"]),
    (lambda: encode(""), ["at least one letter"]),
    (lambda: encode(3), ["text", "int"]),
    (lambda: decode(torch.zeros(2, 2, dtype=torch.long)), ["ids", "(2, 2)"]),
    (lambda: decode([30]), ["ids", "25", "got 30"]),
    (lambda: RepeatTask(vocab_size=30), ["vocab_size", "26", "30"]),
    (lambda: RepeatTask(min_period=1), ["min_period", "at least 2", "min_period=1"]),
    (lambda: RepeatTask(vocab_size=6, max_period=8), ["max_period", "vocab_size=6", "8"]),
    (lambda: RepeatTask(context_length=8, max_period=8), ["context_length=8", "got 8"]),
    (lambda: make_batch(RepeatTask(), 4, 0), ["generator", "torch.Generator", "int"]),
    (lambda: make_batch(RepeatTask(), 0, torch.Generator()), ["batch_size", "got 0"]),
    (lambda: best_possible_loss(RepeatTask(), period=9), ["period", "3 to 8", "got 9"]),
    (lambda: best_possible_loss(RepeatTask(), period=True), ["period", "3 to 8", "got True"]),
])
def test_errors_name_the_argument_what_it_got_and_what_was_expected(call, words):
    with pytest.raises((TypeError, ValueError)) as raised:
        call()
    for word in words:
        assert word in str(raised.value)
