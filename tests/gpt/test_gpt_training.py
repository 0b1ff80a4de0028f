"""Training, evaluation, baselines and head scores of the tiny GPT."""

import math

import pytest
import torch
from torch import nn

from helpers.gpt.data import make_batch
from helpers.gpt.training import (
    bigram_counts,
    bigram_loss,
    generation_accuracy,
    head_scores,
    induction_score,
    induction_targets,
    next_token_score,
    prefix_loss,
    previous_token_score,
    sequence_loss,
    train,
    training_step,
    uniform_loss,
)
from tests.gpt.support import SMALL_TASK, small_model


def eval_batch(batch_size=16, seed=1):
    return make_batch(SMALL_TASK, batch_size, torch.Generator().manual_seed(seed))


# Baselines


def test_uniform_loss_is_the_loss_of_a_model_that_scores_every_letter_alike(masked_model):
    with torch.no_grad():
        masked_model.lm_head.weight.zero_()  # every logit 0: every letter equally likely
    inputs, targets, _ = eval_batch()
    assert sequence_loss(masked_model, inputs, targets) == pytest.approx(
        uniform_loss(SMALL_TASK.vocab_size))
    assert uniform_loss(8) == pytest.approx(math.log(8))


def test_bigram_counts_and_loss_by_hand():
    inputs, targets = torch.tensor([[0, 1, 0]]), torch.tensor([[1, 0, 1]])
    counts = bigram_counts(inputs, targets, vocab_size=2)
    # pairs 0->1 twice, 1->0 once; +1 everywhere
    assert counts.tolist() == [[1.0, 3.0], [2.0, 1.0]]
    expected = -(math.log(3 / 4) + math.log(2 / 3) + math.log(3 / 4)) / 3
    assert bigram_loss(counts, inputs, targets) == pytest.approx(expected)


def test_bigram_cannot_predict_random_letters():
    train_inputs, train_targets, _ = eval_batch(512, seed=0)
    inputs, targets, _ = eval_batch(512, seed=1)
    counts = bigram_counts(train_inputs, train_targets, SMALL_TASK.vocab_size)
    loss = bigram_loss(counts, inputs, targets)
    assert loss == pytest.approx(uniform_loss(SMALL_TASK.vocab_size), abs=0.15)


# Evaluation as trained, and as used


def test_prefix_loss_equals_sequence_loss_only_with_the_mask(masked_model, unmasked_model):
    inputs, targets, _ = eval_batch()
    assert prefix_loss(masked_model, inputs, targets) == pytest.approx(
        sequence_loss(masked_model, inputs, targets), abs=1e-5)
    assert abs(prefix_loss(unmasked_model, inputs, targets)
               - sequence_loss(unmasked_model, inputs, targets)) > 1e-3


class NextLetterOracle(nn.Module):
    """Predicts letter (last + 1) mod V at every position."""

    vocab_size, context_length = SMALL_TASK.vocab_size, SMALL_TASK.context_length

    def forward(self, ids):
        return nn.functional.one_hot((ids + 1) % self.vocab_size, self.vocab_size).float()


def test_generation_accuracy_counts_the_letters_written_right():
    counting = (torch.arange(10) % 8)[None]  # 0 1 2 ... 7 0 1: what the oracle writes
    assert generation_accuracy(NextLetterOracle(), counting, prompt_length=3) == 1.0
    other = counting.clone()
    other[0, 6:] = 2  # the last 4 of the 7 letters it writes (6 7 0 1) differ
    assert generation_accuracy(NextLetterOracle(), other, prompt_length=3) == pytest.approx(3 / 7)
    with pytest.raises(ValueError, match="prompt_length must be smaller than .* T=10, .* got 10"):
        generation_accuracy(NextLetterOracle(), counting, prompt_length=10)


# Head scores on constructed patterns


def test_previous_and_next_token_scores_on_constructed_patterns():
    T = 5
    previous = torch.eye(T).roll(-1, dims=1)  # row i attends to i - 1 ...
    previous[0] = torch.eye(T)[0]  # ... and row 0 to itself
    uniform_causal = torch.ones(T, T).tril() / torch.arange(1, T + 1)[:, None]
    assert previous_token_score(previous).item() == pytest.approx(1.0)
    assert previous_token_score(uniform_causal).item() == pytest.approx(
        sum(1 / (i + 1) for i in range(1, T)) / (T - 1))
    nxt = torch.eye(T).roll(1, dims=1)  # row i attends to i + 1 (the last row to 0)
    assert next_token_score(nxt).item() == pytest.approx(1.0)
    assert next_token_score(uniform_causal).item() == 0.0
    both = torch.stack([previous, nxt])  # (H=2, T, T): one score per head
    assert previous_token_score(both).tolist() == pytest.approx([1.0, 0.0])


def test_induction_targets_by_hand():
    targets = induction_targets(torch.tensor([0, 1, 0, 1]))  # a b a b
    expected = torch.zeros(4, 4, dtype=torch.bool)
    expected[2, 1] = True  # the 2nd "a" looks at what followed the 1st "a": "b"
    expected[3, 2] = True  # the 2nd "b" looks at what followed the 1st "b": "a"
    assert torch.equal(targets, expected)


def test_induction_score_is_one_for_an_induction_head_and_low_for_others():
    ids = torch.tensor([3, 1, 4, 3, 1, 4, 3, 1])  # period 3
    targets = induction_targets(ids).float()
    induction = targets / targets.sum(dim=-1, keepdim=True).clamp(min=1)
    induction[targets.sum(dim=-1) == 0] = torch.eye(8)[targets.sum(dim=-1) == 0]
    previous = torch.eye(8).roll(-1, dims=1)
    previous[0] = torch.eye(8)[0]
    scores = induction_score(torch.stack([induction, previous]), ids)  # (2,)
    assert scores.tolist() == pytest.approx([1.0, 0.0])
    assert torch.isnan(induction_score(previous, torch.tensor([0, 1, 2, 3, 4, 5, 6, 7])))


def test_induction_score_of_a_batch_is_one_per_sequence_and_head():
    ids = torch.stack([torch.tensor([0, 1, 0, 1]), torch.tensor([2, 3, 2, 3])])
    weights = induction_targets(ids).float()[:, None, None]  # (B, L=1, H=1, T, T), rows 2-3
    scores = induction_score(weights.expand(2, 1, 3, 4, 4), ids)
    assert scores.shape == (2, 1, 3) and torch.equal(scores, torch.ones(2, 1, 3))


def test_head_scores_are_those_of_the_model_weights(masked_model):
    inputs, _, _ = eval_batch(4)
    with torch.no_grad():
        _, weights = masked_model(inputs, return_weights=True)
    scores = head_scores(masked_model, inputs)
    assert set(scores) == {"previous token", "next token", "induction"}
    torch.testing.assert_close(scores["previous token"],
                               previous_token_score(weights).mean(dim=0))
    torch.testing.assert_close(scores["induction"], induction_score(weights, inputs).mean(dim=0))
    assert torch.equal(scores["next token"], torch.zeros(2, 2))  # the mask at work


@pytest.mark.parametrize("call, words", [
    (lambda: previous_token_score(torch.ones(3, 4)), ["weights", "(..., T, T)", "(3, 4)"]),
    (lambda: induction_score(torch.ones(4, 4), torch.tensor([0, 1])), ["ids", "T=4", "(2)"]),
    (lambda: bigram_counts(torch.zeros(2), torch.zeros(2, dtype=torch.long), 3),
     ["inputs", "token ids", "float32"]),
    (lambda: bigram_counts(torch.tensor([0, 5]), torch.tensor([0, 1]), 3), ["inputs", "2"]),
])
def test_score_and_baseline_errors_speak(call, words):
    with pytest.raises((TypeError, ValueError)) as raised:
        call()
    for word in words:
        assert word in str(raised.value)


# Training


def test_training_lowers_the_loss_and_is_reproducible():
    losses = train(small_model(), SMALL_TASK, steps=40, batch_size=16, seed=3)
    again = train(small_model(), SMALL_TASK, steps=40, batch_size=16, seed=3)
    other = train(small_model(), SMALL_TASK, steps=40, batch_size=16, seed=4)
    assert len(losses) == 40 and losses == again and losses != other
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5


def test_training_gives_the_same_weights_whatever_the_thread_count():
    """With two threads, PyTorch adds some gradients' parts in another order (LayerNorm's
    among them); train runs on one thread so that every printed number is the same."""
    threads = torch.get_num_threads()
    results = []
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            model = small_model(d_model=32)
            losses = train(model, SMALL_TASK, steps=30, batch_size=32, seed=0)
            assert torch.get_num_threads() == count  # given back as it was
            results.append((losses, model.state_dict()))
    finally:
        torch.set_num_threads(threads)
    (losses_1, weights_1), (losses_2, weights_2) = results
    assert losses_1 == losses_2
    for name, value in weights_1.items():
        assert torch.equal(value, weights_2[name]), name


def test_training_leaves_the_global_random_state_alone():
    model = small_model()
    state = torch.get_rng_state()
    train(model, SMALL_TASK, steps=3, batch_size=4)
    assert torch.equal(torch.get_rng_state(), state)
    assert not model.training  # handed back ready to evaluate


@pytest.mark.parametrize("arguments, words", [
    ({"steps": 0}, ["steps", "got 0"]),
    ({"steps": 2, "lr": -1.0}, ["lr", "greater than 0", "-1.0"]),
    ({"steps": 2, "batch_size": 2.5}, ["batch_size", "float"]),
])
def test_training_errors_speak(arguments, words):
    with pytest.raises((TypeError, ValueError)) as raised:
        train(small_model(), SMALL_TASK, **arguments)
    for word in words:
        assert word in str(raised.value)


def test_a_task_that_does_not_fit_the_model_is_refused():
    from helpers.gpt.data import RepeatTask

    with pytest.raises(ValueError, match="context_length=20.*do not fit.*context_length=10"):
        train(small_model(), RepeatTask(vocab_size=8, context_length=20, max_period=4), steps=1)


def test_evaluation_needs_matching_inputs_and_targets(masked_model):
    inputs, targets, _ = eval_batch(2)
    with pytest.raises(ValueError, match=r"same shape \(B, T\), got \(2, 10\) and \(2, 9\)"):
        sequence_loss(masked_model, inputs, targets[:, :-1])


def test_training_step_is_one_step_down_the_gradient():
    model = small_model()
    inputs, targets, _ = eval_batch(8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = sequence_loss(model, inputs, targets)
    model.train()
    returned = training_step(model, optimizer, inputs, targets)
    assert returned == pytest.approx(before, abs=1e-6)  # the loss before the step
    assert sequence_loss(model, inputs, targets) < before
