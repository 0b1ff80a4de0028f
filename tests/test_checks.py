"""Every exercise check: a right answer, a stub, and each known wrong answer get their own
feedback; the learner's tensors are left alone and the expected answer is never shown."""

import pytest
import torch
from exercise_support import stub

from helpers.checks import (
    CORRECT,
    INCORRECT,
    NOT_ATTEMPTED,
    check_batched_self_attention_weights,
    check_self_attention_weights,
    check_stable_softmax,
)

# ---------------------------------------------------------------- stable softmax

def softmax_right(scores):
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    return torch.exp(shifted) / torch.exp(shifted).sum(dim=-1, keepdim=True)


SOFTMAX_MISTAKES = {
    "no max subtracted": (lambda s: torch.exp(s) / torch.exp(s).sum(-1, keepdim=True),
                          "exp(1000) overflows"),
    "global max": (lambda s: torch.exp(s - s.max()) / torch.exp(s - s.max()).sum(-1, keepdim=True),
                   "each row's own maximum"),
    "no keepdim": (lambda s: torch.exp(s - s.max(dim=-1).values), "keepdim=True"),
    "wrong dim": (lambda s: torch.softmax(s, dim=0), "dim=-1"),
    "no division": (lambda s: torch.exp(s - s.max(-1, keepdim=True).values), "row's sum"),
    "global sum": (lambda s: torch.exp(s - s.max(-1, keepdim=True).values)
                   / torch.exp(s - s.max(-1, keepdim=True).values).sum(), "own sum"),
    "no return": (lambda s: None, "`return`"),
    "a list": (lambda s: softmax_right(s).tolist(), "torch.Tensor"),
}


def test_softmax_check_accepts_a_right_answer_and_the_torch_one():
    assert check_stable_softmax(softmax_right).status == CORRECT
    assert check_stable_softmax(lambda s: torch.softmax(s, dim=-1)).status == CORRECT


def test_softmax_check_says_not_attempted_for_the_stub():
    feedback = check_stable_softmax(stub)
    assert feedback.status == NOT_ATTEMPTED and "stable_softmax" in repr(feedback)


@pytest.mark.parametrize("mistake", SOFTMAX_MISTAKES)
def test_softmax_check_names_each_mistake(mistake):
    function, hint = SOFTMAX_MISTAKES[mistake]
    feedback = check_stable_softmax(function)
    assert feedback.status == INCORRECT
    assert hint in feedback.message, feedback.message


# ---------------------------------------------------------------- attention weights

def weights_right(x, W_query, W_key):
    queries, keys = W_query(x), W_key(x)
    return torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)


def weights_with(transform):
    def function(x, W_query, W_key):
        queries, keys = W_query(x), W_key(x)
        return transform(x, queries, keys)
    return function


WEIGHT_MISTAKES = {
    "unscaled": (lambda x, q, k: torch.softmax(q @ k.mT, -1), "not scaled"),
    "sqrt d_in": (lambda x, q, k: torch.softmax(q @ k.mT / 3**0.5, -1), "sqrt(d_in)"),
    "d_k not sqrt": (lambda x, q, k: torch.softmax(q @ k.mT / 2, -1), "square root"),
    "columns": (lambda x, q, k: torch.softmax(q @ k.mT / 2**0.5, -2), "columns sum to 1"),
    "k q": (lambda x, q, k: torch.softmax(k @ q.mT / 2**0.5, -1), "queries @ keys.T"),
    "raw inputs": (lambda x, q, k: torch.softmax(x @ x.mT / 2**0.5, -1), "raw inputs"),
}


def test_weight_checks_accept_a_right_answer():
    assert check_self_attention_weights(weights_right).status == CORRECT
    assert check_batched_self_attention_weights(weights_right).status == CORRECT


def test_weight_checks_say_not_attempted_for_the_stub():
    assert check_self_attention_weights(stub).status == NOT_ATTEMPTED
    feedback = check_batched_self_attention_weights(stub)
    assert feedback.status == NOT_ATTEMPTED and "exercise 2" in feedback.message


@pytest.mark.parametrize("mistake", WEIGHT_MISTAKES)
def test_weight_checks_name_each_mistake(mistake):
    transform, hint = WEIGHT_MISTAKES[mistake]
    for check in (check_self_attention_weights, check_batched_self_attention_weights):
        feedback = check(weights_with(transform))
        assert feedback.status == INCORRECT
        assert hint in feedback.message, (check.__name__, feedback.message)


BATCH_MISTAKES = {
    ".T on a batch": (lambda x, q, k: torch.softmax(q @ k.T / 2**0.5, -1)
                      if x.ndim == 2 else torch.softmax(q @ k.permute(2, 1, 0) / 2**0.5, -1),
                      "transpose(-2, -1)"),
    "shape[1] as d_k": (lambda x, q, k: torch.softmax(q @ k.mT / k.shape[1] ** 0.5, -1),
                        "keys.shape[1] is T"),
    "dim=1": (lambda x, q, k: torch.softmax(q @ k.mT / 2**0.5, dim=1), "dim=1 is the query axis"),
}


@pytest.mark.parametrize("mistake", BATCH_MISTAKES)
def test_batch_check_names_each_batch_mistake(mistake):
    transform, hint = BATCH_MISTAKES[mistake]
    feedback = check_batched_self_attention_weights(weights_with(transform))
    assert feedback.status == INCORRECT
    assert hint in feedback.message, feedback.message


def test_checks_never_show_the_expected_tensor_and_leave_inputs_alone():
    seen = []

    def spy(x, W_query, W_key):
        seen.append(x)
        x.mul_(0)  # a learner's in-place slip must not change the check's own data
        return torch.zeros(*x.shape[:-1], x.shape[-2])

    for check in (check_self_attention_weights, check_batched_self_attention_weights):
        feedback = check(spy)
        assert feedback.status == INCORRECT and "tensor(" not in feedback.message
    assert check_self_attention_weights(weights_right).status == CORRECT
