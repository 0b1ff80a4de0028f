"""Notebook 02's exercise checks: a right answer, a stub and each known wrong answer get
their own feedback."""

import pytest
import torch
import torch.nn.functional as F
from exercise_support import assert_hint, stub

from helpers.attention import causal_mask
from helpers.checks import (
    CORRECT,
    NOT_ATTEMPTED,
    check_blocked_positions,
    check_mask_for_new_queries,
    check_masked_softmax,
)

NEG_INF = float("-inf")


def ones(T):
    return torch.ones(T, T, dtype=torch.bool)


# ---------------------------------------------------------------- blocked positions

BLOCKED_RIGHT = {
    "triu(diagonal=1)": lambda T: ones(T).triu(diagonal=1),
    "not tril": lambda T: ~ones(T).tril(),
    "comparison": lambda T: torch.arange(T)[None, :] > torch.arange(T)[:, None],
    "float triu, then bool": lambda T: torch.triu(torch.ones(T, T), diagonal=1).bool(),
}

BLOCKED_MISTAKES = {
    "tril instead of triu": (lambda T: ones(T).tril(), "MAY attend"),
    "tril of floats compared": (lambda T: torch.tril(torch.ones(T, T)) == 1, "MAY attend"),
    "diagonal=1 forgotten": (lambda T: ones(T).triu(), "diagonal is blocked too"),
    "past blocked": (lambda T: ones(T).tril(diagonal=-1), "BEFORE each query"),
    "diagonal=2": (lambda T: ones(T).triu(diagonal=2), "key i + 1"),
    "nothing blocked": (lambda T: torch.zeros(T, T, dtype=torch.bool), "nothing is blocked"),
    "float mask": (lambda T: torch.triu(torch.ones(T, T), diagonal=1), "must be boolean"),
    "wrong shape": (lambda T: ones(T + 1).triu(diagonal=1), "expected (5, 5)"),
    "no return": (lambda T: None, "`return`"),
    "other": (lambda T: ones(T).triu(diagonal=1).flip(0), "column j > row i"),
    "raises": (lambda T: torch.ones(T, T).triu(diagonal="1"), "raised TypeError"),
}


@pytest.mark.parametrize("answer", BLOCKED_RIGHT)
def test_blocked_positions_accepts_right_answers(answer):
    assert check_blocked_positions(BLOCKED_RIGHT[answer]).status == CORRECT


def test_blocked_positions_says_not_attempted_for_the_stub():
    feedback = check_blocked_positions(stub)
    assert feedback.status == NOT_ATTEMPTED and "blocked_positions" in feedback.message


@pytest.mark.parametrize("mistake", BLOCKED_MISTAKES)
def test_blocked_positions_names_each_mistake(mistake):
    answer, hint = BLOCKED_MISTAKES[mistake]
    assert_hint(check_blocked_positions(answer), hint)


def test_blocked_positions_is_checked_for_every_size():
    # Right for T = 5 only: a check that tried one size would pass it.
    def only_five(T):
        return ones(5).triu(diagonal=1)

    assert_hint(check_blocked_positions(only_five), "returned shape (5, 5), expected (1, 1)")


# ---------------------------------------------------------------- masked softmax

def renormalised(scores, mask):
    zeroed = torch.softmax(scores, dim=-1) * mask
    return zeroed / zeroed.sum(dim=-1, keepdim=True)


SOFTMAX_RIGHT = {
    "-inf then softmax": lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), dim=-1),
    "renormalised": renormalised,
    "finfo.min": lambda s, m: torch.softmax(s.masked_fill(~m, torch.finfo(s.dtype).min), -1),
    "additive": lambda s, m: torch.softmax(s + torch.zeros(m.shape).masked_fill(~m, NEG_INF), -1),
}

SOFTMAX_MISTAKES = {
    "zeroed after, not renormalised": (lambda s, m: torch.softmax(s, -1) * m,
                                       "no longer sum to 1"),
    "masked_fill with mask": (lambda s, m: torch.softmax(s.masked_fill(m, NEG_INF), -1),
                              "the mask is inverted"),
    "inverted, zeroed after": (lambda s, m: torch.softmax(s, -1).masked_fill(m, 0.0),
                               "inverted, and applied after the softmax"),
    "blocked scores 0": (lambda s, m: torch.softmax(s * m, -1), "e^0 = 1"),
    "mask added": (lambda s, m: torch.softmax(s + m, -1), "added to the scores as numbers"),
    "columns": (lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), dim=-2),
                "down the columns"),
    "batch dimension": (lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), dim=0),
                        "across the batch"),
    "no mask": (lambda s, m: torch.softmax(s, -1), "nothing is masked"),
    "always causal": (lambda s, m: torch.softmax(
        s.masked_fill(~causal_mask(s.shape[-1]), NEG_INF), -1), "not the mask passed in"),
    "-inf where the transposed mask allows": (
        lambda s, m: torch.softmax(s.masked_fill(m.T, NEG_INF), -1), "NaN in the weights"),
    "unscaled shape": (lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), -1)[0],
                       "returned shape (5, 5), expected (2, 5, 5)"),
}


@pytest.mark.parametrize("answer", SOFTMAX_RIGHT)
def test_masked_softmax_accepts_right_answers(answer):
    assert check_masked_softmax(SOFTMAX_RIGHT[answer]).status == CORRECT


def test_masked_softmax_says_not_attempted_for_the_stub():
    assert check_masked_softmax(stub).status == NOT_ATTEMPTED


@pytest.mark.parametrize("mistake", SOFTMAX_MISTAKES)
def test_masked_softmax_names_each_mistake(mistake):
    answer, hint = SOFTMAX_MISTAKES[mistake]
    assert_hint(check_masked_softmax(answer), hint)


# ---------------------------------------------------------------- mask for new queries

def new_rows(T_new, T_total):
    return causal_mask(T_total)[-T_new:]


NEW_QUERY_RIGHT = {
    "last rows": new_rows,
    "comparison": lambda n, t: torch.arange(t)[None, :] <= torch.arange(t - n, t)[:, None],
    "tril with offset": lambda n, t: torch.ones(n, t, dtype=torch.bool).tril(diagonal=t - n),
}

NEW_QUERY_MISTAKES = {
    "inverted, for masked_fill": (lambda n, t: ~new_rows(n, t), "True and False are swapped"),
    "triu blocked rows": (lambda n, t: ones(t).triu(diagonal=1)[-n:], "True and False are swapped"),
    "top-left, as is_causal": (lambda n, t: causal_mask(t)[:n], "is_causal=True"),
    "one row early": (lambda n, t: causal_mask(t)[-n - 1:-1], "off by one"),
    "diagonal blocked": (lambda n, t: ones(t).tril(diagonal=-1)[-n:], "its own key"),
    "one row late": (lambda n, t: ones(t).tril(diagonal=1)[-n:], "the key right after it"),
    "all allowed": (lambda n, t: torch.ones(n, t, dtype=torch.bool), "each other's future"),
    "new keys only": (lambda n, t: causal_mask(n), "(T_new, T_new)"),
    "whole sequence": (lambda n, t: causal_mask(t), "(T_total, T_total)"),
    "transposed": (lambda n, t: new_rows(n, t).T, "rows and columns are swapped"),
    "float 0/1": (lambda n, t: new_rows(n, t).float(), "ADDED to the scores"),
    "other": (lambda n, t: new_rows(n, t).flip(1), "up to and including itself"),
}


@pytest.mark.parametrize("answer", NEW_QUERY_RIGHT)
def test_new_query_mask_accepts_right_answers(answer):
    assert check_mask_for_new_queries(NEW_QUERY_RIGHT[answer]).status == CORRECT


def test_new_query_mask_says_not_attempted_for_the_stub():
    assert check_mask_for_new_queries(stub).status == NOT_ATTEMPTED


@pytest.mark.parametrize("mistake", NEW_QUERY_MISTAKES)
def test_new_query_mask_names_each_mistake(mistake):
    answer, hint = NEW_QUERY_MISTAKES[mistake]
    assert_hint(check_mask_for_new_queries(answer), hint)


def test_the_inverted_mask_really_attends_to_the_future_in_sdpa():
    """What the inverted-mask hint says, measured with PyTorch's own function."""
    T_new, T_total = 2, 6
    generator = torch.Generator().manual_seed(0)
    queries, keys = torch.randn(T_new, 4, generator=generator), torch.randn(T_total, 4)
    values = torch.eye(T_total)  # the output is then the weights
    weights = F.scaled_dot_product_attention(queries, keys, values,
                                             attn_mask=~new_rows(T_new, T_total))
    first_new = T_total - T_new
    assert weights[0, first_new + 1:].sum() == pytest.approx(1.0)  # only the keys after it
    assert weights[-1].abs().sum() == 0  # the last new token attends to nothing
