"""Notebook 04's exercise checks: a right answer, a stub and each known wrong answer get
their own feedback; the learner's class is built by the check, never an instance of theirs."""

import pytest
import torch
from exercise_support import assert_hint
from torch import nn

from helpers.attention import CausalAttention, attention_weights
from helpers.checks import (
    CORRECT,
    NOT_ATTEMPTED,
    check_buffer,
    check_causal_attention_forward,
)

# ---------------------------------------------------------------- the sliced mask

def attention_class(steps):
    """A CausalAttention subclass whose forward is steps(module, x, queries, keys, values)."""
    class Answer(CausalAttention):
        def forward(self, x):
            return steps(self, x, self.W_query(x), self.W_key(x), self.W_value(x))
    return Answer


def masked(scores, mask):
    return scores.masked_fill(~mask, float("-inf"))


def scores_of(q, k, scale=None):
    return q @ k.transpose(-2, -1) / (k.shape[-1] ** 0.5 if scale is None else scale)


FORWARD_RIGHT = {
    "sliced buffer": attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k), m.causal_mask[:x.shape[1], :x.shape[1]]), -1) @ v),
    "helpers": attention_class(lambda m, x, q, k, v: attention_weights(
        q, k, attn_mask=m.causal_mask[:x.shape[1], :x.shape[1]]) @ v),
    "bottom-right corner": attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k), m.causal_mask[-x.shape[1]:, -x.shape[1]:]), -1) @ v),
}

FORWARD_MISTAKES = {
    "not sliced": (attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k), m.causal_mask), -1) @ v), "self.causal_mask[:T, :T]"),
    "rows only": (attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k), m.causal_mask[:x.shape[1]]), -1) @ v), "both dimensions"),
    "not sliced, helpers": (attention_class(lambda m, x, q, k, v: attention_weights(
        q, k, attn_mask=m.causal_mask) @ v), "fails for T = 4"),
    "inverted": (attention_class(lambda m, x, q, k, v: torch.softmax(scores_of(q, k).masked_fill(
        m.causal_mask[:x.shape[1], :x.shape[1]], float("-inf")), -1) @ v), "mask is inverted"),
    "unscaled": (attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k, 1.0), m.causal_mask[:x.shape[1], :x.shape[1]]), -1) @ v),
                 "not scaled"),
    "sqrt(d_in)": (attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k, 3**0.5), m.causal_mask[:x.shape[1], :x.shape[1]]), -1) @ v),
                   "sqrt(d_in)"),
    "query axis": (attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k), m.causal_mask[:x.shape[1], :x.shape[1]]), 1) @ v), "dim=1"),
    "no mask": (attention_class(lambda m, x, q, k, v: torch.softmax(scores_of(q, k), -1) @ v),
                "nothing is masked"),
    "zeroed after": (attention_class(lambda m, x, q, k, v: (torch.softmax(
        scores_of(q, k), -1) * m.causal_mask[:x.shape[1], :x.shape[1]]) @ v),
                     "without renormalising"),
    "weights returned": (attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k), m.causal_mask[:x.shape[1], :x.shape[1]]), -1)),
                         "returned shape (2, 6, 6), expected (2, 6, 2)"),
    "raises at full length": (attention_class(lambda m, x, q, k, v: q @ k), "raised RuntimeError"),
    "other": (attention_class(lambda m, x, q, k, v: torch.softmax(
        masked(scores_of(q, k), m.causal_mask[:x.shape[1], :x.shape[1]]), -1) @ v + 1),
              "wrong context vectors for T = 6"),
}


class NotYet(CausalAttention):
    def forward(self, x):
        raise NotImplementedError("complete forward")


class ExtraWeights(CausalAttention):
    def __init__(self, *args):
        super().__init__(*args)
        self.extra = nn.Linear(2, 2)


@pytest.mark.parametrize("answer", FORWARD_RIGHT)
def test_forward_check_accepts_right_answers(answer):
    feedback = check_causal_attention_forward(FORWARD_RIGHT[answer])
    assert feedback.status == CORRECT, feedback.message


def test_forward_check_says_not_attempted_for_the_stub():
    feedback = check_causal_attention_forward(NotYet)
    assert feedback.status == NOT_ATTEMPTED and "MyCausalAttention" in feedback.message


@pytest.mark.parametrize("mistake", FORWARD_MISTAKES)
def test_forward_check_names_each_mistake(mistake):
    answer, hint = FORWARD_MISTAKES[mistake]
    assert_hint(check_causal_attention_forward(answer), hint)


def test_forward_check_reports_a_class_that_does_not_take_the_weights():
    assert_hint(check_causal_attention_forward(ExtraWeights), "change only forward")


# ---------------------------------------------------------------- the buffer

def scaler_class(store):
    """An nn.Module whose __init__ runs store(self, factors) and whose forward is x * factors."""
    class Answer(nn.Module):
        def __init__(self):
            super().__init__()
            store(self, torch.tensor([1.0, 0.5, 0.25]))

        def forward(self, x):
            return x * self.factors
    return Answer


BUFFER_RIGHT = scaler_class(lambda m, f: m.register_buffer("factors", f, persistent=False))

BUFFER_MISTAKES = {
    "plain attribute": (scaler_class(lambda m, f: setattr(m, "factors", f)), "plain attribute"),
    "persistent buffer": (scaler_class(lambda m, f: m.register_buffer("factors", f)),
                          "persistent=False"),
    "parameter": (scaler_class(lambda m, f: setattr(m, "factors", nn.Parameter(f))),
                  "nn.Parameter"),
    "another name": (scaler_class(lambda m, f: m.register_buffer("scale", f, persistent=False)),
                     "no tensor `factors`"),
    "other values": (scaler_class(lambda m, f: m.register_buffer("factors", f * 2,
                                                                 persistent=False)),
                     "should give the factors"),
    "raises": (scaler_class(lambda m, f: m.register_buffer("factors", [1.0])), "raised TypeError"),
}


class ScalerNotYet(nn.Module):
    def __init__(self):
        super().__init__()
        raise NotImplementedError("register factors as a buffer")


def test_buffer_check_accepts_the_right_answer():
    assert check_buffer(BUFFER_RIGHT).status == CORRECT


def test_buffer_check_says_not_attempted_for_the_stub():
    feedback = check_buffer(ScalerNotYet)
    assert feedback.status == NOT_ATTEMPTED and "Scaler.__init__" in feedback.message


@pytest.mark.parametrize("mistake", BUFFER_MISTAKES)
def test_buffer_check_names_each_mistake(mistake):
    answer, hint = BUFFER_MISTAKES[mistake]
    assert_hint(check_buffer(answer), hint)
