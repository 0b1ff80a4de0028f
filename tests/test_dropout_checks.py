"""Notebook 03's exercise checks: a right answer, a stub and each known wrong answer get
their own feedback."""

import pytest
import torch
import torch.nn.functional as F
from exercise_support import assert_hint, stub

from helpers.attention import attention_dropout, attention_weights
from helpers.checks import (
    CORRECT,
    NOT_ATTEMPTED,
    check_causal_context,
    check_inference_weights,
    check_my_dropout,
)

# ---------------------------------------------------------------- my_dropout

def dropout_right(weights, p, generator=None):
    if p == 1:
        return torch.zeros_like(weights)
    keep = torch.rand(weights.shape, generator=generator) >= p
    return weights * keep / (1 - p)


def with_keep(build):
    """A dropout whose kept entries are build(weights, keep, p); p = 0 and 1 handled right."""
    def function(weights, p, generator=None):
        if p in (0, 1):
            return dropout_right(weights, p, generator)
        keep = torch.rand(weights.shape, generator=generator) >= p
        return build(weights, keep, p)
    return function


DROPOUT_RIGHT = {
    "rand >= p": dropout_right,
    "where": lambda w, p, generator=None: torch.where(
        torch.rand(w.shape, generator=generator) < p, torch.zeros_like(w), w / (1 - p))
    if p < 1 else torch.zeros_like(w),
    "the helpers' bernoulli": lambda w, p, generator=None: attention_dropout(
        w, p, generator=generator)[0],
}

DROPOUT_MISTAKES = {
    "no 1/(1-p)": (with_keep(lambda w, keep, p: w * keep), "not scaled: multiply them by 1/(1"),
    "times (1-p)": (with_keep(lambda w, keep, p: w * keep * (1 - p)), "DIVIDES them by 1 - p"),
    "divided by p": (with_keep(lambda w, keep, p: w * keep / p), "divided by p"),
    "other factor": (with_keep(lambda w, keep, p: w * keep * 3), "multiplied by 3.000"),
    "keeps where rand < p": (with_keep(lambda w, keep, p: w * ~keep / (1 - p)),
                             "keeps where the random number is below p"),
    "keeps too many": (with_keep(lambda w, keep, p: w * (keep | (torch.arange(w.numel())
                                                                 .view(w.shape) % 2 == 0))
                                 / (1 - p)), "about 1 - p = 0.70 should be kept"),
    "uneven factors": (with_keep(lambda w, keep, p: w * keep / (1 - p) * (1 + keep.cumsum(-1)
                                                                         / 1000)),
                       "not all multiplied by the same factor"),
    "in place": (with_keep(lambda w, keep, p: w.mul_(keep / (1 - p))), "changed the `weights`"),
    "ignores the generator": (lambda w, p, generator=None: dropout_right(w, p),
                              "generators seeded alike"),
    "0/0 at p = 1": (lambda w, p, generator=None: w * (torch.rand(w.shape, generator=generator)
                                                        >= p) / (1 - p), "0/0"),
    "drops at p = 0": (lambda w, p, generator=None: dropout_right(w, max(p, 0.1), generator),
                       "p = 0 must give the weights back"),
    "everything dropped": (lambda w, p, generator=None: torch.zeros_like(w), "every entry"),
    "generator required": (lambda w, p, generator: dropout_right(w, p, generator.manual_seed(0)),
                           "with no generator"),
    "NaN": (lambda w, p, generator=None: torch.full_like(w, float("nan")), "NaN"),
    "no return": (lambda w, p, generator=None: None, "`return`"),
}


@pytest.mark.parametrize("answer", DROPOUT_RIGHT)
def test_my_dropout_accepts_right_answers(answer):
    feedback = check_my_dropout(DROPOUT_RIGHT[answer])
    assert feedback.status == CORRECT, feedback.message


def test_my_dropout_says_not_attempted_for_the_stub():
    assert check_my_dropout(stub).status == NOT_ATTEMPTED


@pytest.mark.parametrize("mistake", DROPOUT_MISTAKES)
def test_my_dropout_names_each_mistake(mistake):
    answer, hint = DROPOUT_MISTAKES[mistake]
    assert_hint(check_my_dropout(answer), hint)


def test_my_dropout_check_leaves_the_global_generator_as_it_was():
    state = torch.get_rng_state()
    check_my_dropout(DROPOUT_MISTAKES["ignores the generator"][0])
    check_my_dropout(dropout_right)
    assert torch.equal(torch.get_rng_state(), state)


# ---------------------------------------------------------------- inference weights

INFERENCE_MISTAKES = {
    "inverted dropout's scaling": (lambda w, p: w / (1 - p), "TRAINING-time scaling"),
    "unchanged": (lambda w, p: w.clone(), "unchanged weights are larger"),
    "times p": (lambda w, p: w * p, "multiplied by p"),
    "renormalised": (lambda w, p: w * (1 - p) / (w * (1 - p)).sum(-1, keepdim=True),
                     "unchanged weights are larger"),
    "other": (lambda w, p: w * (1 - p) ** 2, "kept with probability 1 - p"),
    "wrong shape": (lambda w, p: (w * (1 - p))[0], "returned shape (6,)"),
}


def test_inference_weights_accepts_the_right_answer():
    assert check_inference_weights(lambda w, p: w * (1 - p)).status == CORRECT


def test_inference_weights_says_not_attempted_for_the_stub():
    assert check_inference_weights(stub).status == NOT_ATTEMPTED


@pytest.mark.parametrize("mistake", INFERENCE_MISTAKES)
def test_inference_weights_names_each_mistake(mistake):
    answer, hint = INFERENCE_MISTAKES[mistake]
    assert_hint(check_inference_weights(answer), hint)


# ---------------------------------------------------------------- causal context

def scores_of(queries, keys):
    return queries @ keys.T / keys.shape[-1] ** 0.5


def causal(scores):
    T = scores.shape[-1]
    return scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))


def context_right(queries, keys, values, dropout):
    return dropout(attention_weights(queries, keys, is_causal=True)) @ values


def context_by_hand(queries, keys, values, dropout):
    weights = torch.softmax(causal(scores_of(queries, keys)), dim=-1)
    return dropout(weights) @ values


def context_functional(queries, keys, values, dropout):
    weights = attention_weights(queries, keys, is_causal=True)
    return F.dropout(weights, dropout.p, training=dropout.training) @ values


CONTEXT_MISTAKES = {
    "dropout on the scores": (lambda q, k, v, d: torch.softmax(causal(d(scores_of(q, k))), -1) @ v,
                              "before the softmax"),
    "dropout on the masked scores": (lambda q, k, v, d: torch.softmax(
        d(causal(scores_of(q, k))), -1) @ v, "before the softmax"),
    "dropout on the context": (lambda q, k, v, d: d(context_right(q, k, v, torch.nn.Identity())),
                               "applied to the context vectors"),
    "dropout on the values": (lambda q, k, v, d: attention_weights(q, k, is_causal=True) @ d(v),
                              "applied to the values"),
    "no dropout": (lambda q, k, v, d: attention_weights(q, k, is_causal=True) @ v,
                   "no dropout in training mode"),
    "not causal": (lambda q, k, v, d: d(torch.softmax(scores_of(q, k), -1)) @ v, "not causal"),
    "scaling undone": (lambda q, k, v, d: d(attention_weights(q, k, is_causal=True))
                       * (1 - d.p) @ v, "do not undo it"),
    "renormalised after dropout": (lambda q, k, v, d: F.normalize(
        d(attention_weights(q, k, is_causal=True)), p=1, dim=-1) @ v, "renormalised after"),
    "always drops": (lambda q, k, v, d: F.dropout(attention_weights(q, k, is_causal=True), d.p,
                                                  training=True) @ v, "still dropped"),
    "eval mode differs otherwise": (lambda q, k, v, d: context_right(q, k, v, d)
                                    * (1 if d.training else 2), "without dropout"),
    "other": (lambda q, k, v, d: context_right(q, k, v, d) + 1, "dropout(weights), then"),
    "drops twice": (lambda q, k, v, d: d(d(attention_weights(q, k, is_causal=True))) @ v,
                    "dropout(weights), then"),
}


@pytest.mark.parametrize("answer", [context_right, context_by_hand, context_functional])
def test_causal_context_accepts_right_answers(answer):
    feedback = check_causal_context(answer)
    assert feedback.status == CORRECT, feedback.message


def test_causal_context_says_not_attempted_for_the_stub():
    assert check_causal_context(stub).status == NOT_ATTEMPTED


@pytest.mark.parametrize("mistake", CONTEXT_MISTAKES)
def test_causal_context_names_each_mistake(mistake):
    answer, hint = CONTEXT_MISTAKES[mistake]
    assert_hint(check_causal_context(answer), hint)


def test_causal_context_cannot_change_the_checks_own_module():
    def sabotage(queries, keys, values, dropout):
        dropout.p = 0.0  # a learner's slip on the module it was given
        return context_right(queries, keys, values, dropout)

    # With p changed the answer has no dropout: the check still compares with p = 0.5.
    assert_hint(check_causal_context(sabotage), "no dropout in training mode")
