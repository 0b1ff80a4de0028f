"""Notebook 06's exercise checks: a right answer, a stub and each known wrong answer get
their own feedback."""

import pytest
import torch
import torch.nn.functional as F
from exercise_support import stub

from helpers.attention import causal_mask, padding_mask
from helpers.checks import (
    CORRECT,
    INCORRECT,
    NOT_ATTEMPTED,
    check_causal_padding_mask,
    check_masked_loss,
    check_safe_masked_softmax,
)

# ---------------------------------------------------------------- combined mask

def mask_right(lengths, T, side):
    is_token = padding_mask(lengths, T, side=side)  # (B, T)
    return causal_mask(T) & is_token[:, None, None, :]  # (B, 1, T, T)


def by_hand(lengths, T, side):
    positions = torch.arange(T)  # (T,)
    counts = torch.tensor(lengths)[:, None]  # (B, 1)
    is_token = positions < counts if side == "right" else positions >= T - counts  # (B, T)
    causal = torch.ones(T, T).tril().bool()
    return (causal & is_token.unsqueeze(1)).unsqueeze(1)


def with_mask(build):
    def function(lengths, T, side):
        return build(padding_mask(lengths, T, side=side), causal_mask(T))
    return function


MASK_MISTAKES = {
    "query rows": (with_mask(lambda p, c: c & p[:, None, :, None]), "QUERIES (rows)"),
    "inverted": (with_mask(lambda p, c: ~(c & p[:, None, None, :])), "swapped"),
    "masked_fill style": (with_mask(lambda p, c: ~c | ~p[:, None, None, :]), "swapped"),
    "padding inverted": (with_mask(lambda p, c: c & ~p[:, None, None, :]), "padding part is "
                                                                            "inverted"),
    "no causal": (with_mask(lambda p, c: p[:, None, None, :].expand(-1, 1, c.shape[0], -1)),
                  "causal part is missing"),
    "rows and keys": (with_mask(lambda p, c: c & p[:, None, None, :] & p[:, None, :, None]),
                      "QUERIES (rows)"),
    "side ignored": (lambda lengths, T, side: mask_right(lengths, T, "right"), "wrong side"),
    "diagonal blocked": (with_mask(lambda p, c: ~torch.ones_like(c).triu() & p[:, None, None, :]),
                         "diagonal is blocked"),
    "no head dim": (with_mask(lambda p, c: c & p[:, None, :]), "add the head dimension"),
    "key mask alone": (with_mask(lambda p, c: p[:, None, None, :]), "key-padding mask alone"),
    "causal alone": (with_mask(lambda p, c: c), "padding part is missing"),
    "float": (with_mask(lambda p, c: (c & p[:, None, None, :]).float()), "boolean"),
    "no return": (lambda lengths, T, side: None, "`return`"),
    "raises": (lambda lengths, T, side: torch.ones(2, 3) & torch.ones(4, 5), "raised"),
}


def test_mask_check_accepts_right_answers():
    assert check_causal_padding_mask(mask_right).status == CORRECT
    assert check_causal_padding_mask(by_hand).status == CORRECT


def test_mask_check_says_not_attempted_for_the_stub():
    feedback = check_causal_padding_mask(stub)
    assert feedback.status == NOT_ATTEMPTED and "combined_mask" in repr(feedback)


@pytest.mark.parametrize("mistake", MASK_MISTAKES)
def test_mask_check_names_each_mistake(mistake):
    function, hint = MASK_MISTAKES[mistake]
    feedback = check_causal_padding_mask(function)
    assert feedback.status == INCORRECT
    assert hint in feedback.message, feedback.message


# ---------------------------------------------------------------- safe masked softmax

def softmax_right(scores, allowed):
    no_key = ~allowed.any(dim=-1, keepdim=True)  # (..., T, 1)
    safe = scores.masked_fill(~allowed, float("-inf")).masked_fill(no_key, 0.0)
    return torch.softmax(safe, dim=-1).masked_fill(no_key, 0.0)


def softmax_right_with_where(scores, allowed):
    no_key = ~allowed.any(dim=-1, keepdim=True)  # (..., T, 1)
    kept = torch.where(allowed | no_key, scores, float("-inf"))  # empty rows keep their scores
    return torch.softmax(kept, dim=-1) * ~no_key


def softmax_formed_nan_replaced(scores, allowed):
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return weights.masked_fill(~allowed.any(dim=-1, keepdim=True), 0.0)


def additive_then_nan_to_num(scores, allowed):
    additive = torch.zeros_like(scores).masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores + additive, dim=-1).nan_to_num(0.0)


SOFTMAX_MISTAKES = {
    "plain softmax": (lambda s, a: torch.softmax(s.masked_fill(~a, float("-inf")), -1),
                      "NaN in the rows with no allowed key"),
    "finite fill": (lambda s, a: torch.softmax(s.masked_fill(~a, torch.finfo(s.dtype).min), -1),
                    "spread evenly"),
    "inverted": (lambda s, a: torch.softmax(s.masked_fill(a, float("-inf")), -1), "inverted"),
    "inverted, cleaned": (lambda s, a: torch.softmax(s.masked_fill(a, float("-inf")), -1)
                          .nan_to_num(0.0), "inverted"),
    "zeroed after": (lambda s, a: torch.softmax(s, -1).masked_fill(~a, 0.0), "before the softmax"),
    "nan_to_num after additive": (additive_then_nan_to_num, "all the way back to the scores"),
    "NaN formed, replaced": (softmax_formed_nan_replaced, "happens to stop it"),
    "wrong shape": (lambda s, a: softmax_right(s, a)[0], "shape"),
}


def test_softmax_check_accepts_right_answers():
    assert check_safe_masked_softmax(softmax_right).status == CORRECT
    assert check_safe_masked_softmax(softmax_right_with_where).status == CORRECT


def test_softmax_check_says_not_attempted_for_the_stub():
    assert check_safe_masked_softmax(stub).status == NOT_ATTEMPTED


@pytest.mark.parametrize("mistake", SOFTMAX_MISTAKES)
def test_softmax_check_names_each_mistake(mistake):
    function, hint = SOFTMAX_MISTAKES[mistake]
    feedback = check_safe_masked_softmax(function)
    assert feedback.status == INCORRECT
    assert hint in feedback.message, feedback.message


# ---------------------------------------------------------------- masked loss

def loss_by_selection(logits, targets, is_token):
    return F.cross_entropy(logits[is_token], targets[is_token])  # (N, V) and (N,)


def loss_by_ignore_index(logits, targets, is_token):
    ignored = targets.masked_fill(~is_token, -100)  # (B, T)
    return F.cross_entropy(logits.flatten(0, 1), ignored.flatten(), ignore_index=-100)


def per_token(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view(
        targets.shape)


LOSS_MISTAKES = {
    "multiplied": (lambda lo, t, m: (per_token(lo, t) * m).sum() / m.sum(), "NaN * 0 = NaN"),
    "all positions": (lambda lo, t, m: F.cross_entropy(lo.flatten(0, 1), t.flatten()),
                      "padded positions are counted"),
    "divided by B*T": (lambda lo, t, m: (per_token(lo, t) * m).sum() / m.numel(), "B*T"),
    "sum": (lambda lo, t, m: (per_token(lo, t) * m).sum(), "the sum"),
    "mean of means": (lambda lo, t, m: ((per_token(lo, t) * m).sum(-1) / m.sum(-1)).mean(),
                      "averages each sequence"),
    "classes last": (lambda lo, t, m: F.cross_entropy(lo, t), "dimension 1"),
    "per token": (lambda lo, t, m: per_token(lo, t)[m], "one number"),
}


def test_loss_check_accepts_right_answers():
    assert check_masked_loss(loss_by_selection).status == CORRECT
    assert check_masked_loss(loss_by_ignore_index).status == CORRECT


def test_loss_check_says_not_attempted_for_the_stub():
    assert check_masked_loss(stub).status == NOT_ATTEMPTED


@pytest.mark.parametrize("mistake", LOSS_MISTAKES)
def test_loss_check_names_each_mistake(mistake):
    function, hint = LOSS_MISTAKES[mistake]
    feedback = check_masked_loss(function)
    assert feedback.status == INCORRECT
    assert hint in feedback.message, feedback.message


def test_checks_leave_no_gradient_on_shared_state_and_never_show_the_answer():
    for check, function in ((check_causal_padding_mask, mask_right),
                            (check_safe_masked_softmax, softmax_right),
                            (check_masked_loss, loss_by_selection)):
        feedback = check(function)
        assert "tensor(" not in feedback.message
