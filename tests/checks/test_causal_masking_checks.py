"""Notebook 02's exercise checks: a table of right and wrong answers per check."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.attention import causal_mask
from helpers.checks import CORRECT
from helpers.checks.causal_masking import (
    check_blocked_positions,
    check_mask_for_new_queries,
    check_masked_softmax,
)
from tests.checks.support import table_tests

NEG_INF = float("-inf")
NOTEBOOK_T = 6


def ones(T):
    return torch.ones(T, T, dtype=torch.bool)


# ---------------------------------------------------------------- blocked positions


def blocked_loop(T):
    blocked = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            blocked[i, j] = j > i
    return blocked


BLOCKED_RIGHT = {
    "triu": lambda T: ones(T).triu(diagonal=1),
    "not tril": lambda T: ~ones(T).tril(),
    "comparison": lambda T: torch.arange(T)[None, :] > torch.arange(T)[:, None],
    "loop": blocked_loop,
    "NumPy": lambda T: torch.from_numpy(np.triu(np.ones((T, T), dtype=bool), k=1)),
    "float triu, then bool": lambda T: torch.triu(torch.ones(T, T), diagonal=1).bool(),
}

BLOCKED_WRONG = {
    "tril instead of triu": (lambda T: ones(T).tril(), "MAY attend"),
    "tril of floats compared": (lambda T: torch.tril(torch.ones(T, T)) == 1, "MAY attend"),
    "diagonal=1 forgotten": (lambda T: ones(T).triu(), "diagonal is blocked too"),
    "past blocked": (lambda T: ones(T).tril(diagonal=-1), "BEFORE each query"),
    "diagonal=2": (lambda T: ones(T).triu(diagonal=2), "key i + 1"),
    "nothing blocked": (lambda T: torch.zeros(T, T, dtype=torch.bool), "nothing is blocked"),
    "everything blocked": (lambda T: ones(T), "everything is blocked"),
    "float mask": (lambda T: torch.triu(torch.ones(T, T), diagonal=1), "must be boolean"),
    "the notebook's T": (lambda T: ones(NOTEBOOK_T).triu(diagonal=1), "expected (5, 5)"),
    "no return": (lambda T: None, "`return`"),
    "a NumPy array": (lambda T: np.triu(np.ones((T, T), dtype=bool), k=1), "NumPy array"),
    "another device": (lambda T: ones(T).triu(diagonal=1).to("meta"), "on device 'meta'"),
    "other": (lambda T: ones(T).triu(diagonal=1).flip(0), "column j > row i"),
    "raises": (lambda T: torch.ones(T, T).triu(diagonal="1"), "raised TypeError"),
}

test_blocked_right, test_blocked_wrong = table_tests(
    check_blocked_positions, BLOCKED_RIGHT, BLOCKED_WRONG, giveaways=["triu(diagonal=1)"])

# ---------------------------------------------------------------- masked softmax


def renormalised(scores, mask):
    zeroed = torch.softmax(scores, dim=-1) * mask
    return zeroed / zeroed.sum(dim=-1, keepdim=True)


def softmax_loop(scores, mask):
    mask = mask.expand(scores.shape)
    flat_scores, flat_mask = scores.reshape(-1, scores.shape[-1]), mask.reshape(-1, mask.shape[-1])
    rows = []
    for row, allowed in zip(flat_scores, flat_mask, strict=True):
        exponentials = torch.where(allowed, torch.exp(row - row[allowed].max()), 0.0)
        rows.append(exponentials / exponentials.sum())
    return torch.stack(rows).reshape(scores.shape)


def in_place(scores, mask):
    return torch.softmax(scores.masked_fill_(~mask, NEG_INF), dim=-1)


SOFTMAX_RIGHT = {
    "-inf then softmax": lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), dim=-1),
    "finfo.min": lambda s, m: torch.softmax(s.masked_fill(~m, torch.finfo(s.dtype).min), -1),
    "additive": lambda s, m: torch.softmax(s + torch.zeros(m.shape).masked_fill(~m, NEG_INF), -1),
    "where": lambda s, m: torch.softmax(torch.where(m, s, NEG_INF), dim=-1),
    "loop over rows": softmax_loop,
    "float64": lambda s, m: torch.softmax(s.double().masked_fill(~m, NEG_INF), dim=-1),
    "renormalised (strategy 1)": renormalised,
    "hard-coded -1e9": lambda s, m: torch.softmax(s.masked_fill(~m, -1e9), -1),
}

REMARKS = {"renormalised (strategy 1)": "strategy 1", "hard-coded -1e9": "float16"}

SOFTMAX_WRONG = {
    "zeroed after, not renormalised": (lambda s, m: torch.softmax(s, -1) * m,
                                       "no longer sum to 1"),
    "masked_fill with mask": (lambda s, m: torch.softmax(s.masked_fill(m, NEG_INF), -1),
                              "the mask is inverted"),
    "inverted, zeroed after": (lambda s, m: torch.softmax(s, -1).masked_fill(m, 0.0),
                               "inverted, and applied after the softmax"),
    "blocked scores 0": (lambda s, m: torch.softmax(s.masked_fill(~m, 0.0), -1), "e^0 = 1"),
    "multiplied by the mask": (lambda s, m: torch.softmax(s * m, -1), "e^0 = 1"),
    "mask added": (lambda s, m: torch.softmax(s + m, -1), "added to the scores as numbers"),
    "columns": (lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), dim=-2), "dimension 1"),
    "batch dimension": (lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), dim=0),
                        "dimension 0"),
    "3-D only: dim=2": (lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), dim=2),
                        "dimension 2 of 4"),
    "no mask": (lambda s, m: torch.softmax(s, -1), "nothing is masked"),
    "always causal": (lambda s, m: torch.softmax(
        s.masked_fill(~causal_mask(s.shape[-1]), NEG_INF), -1), "not the mask passed in"),
    "-inf where the transposed mask allows": (
        lambda s, m: torch.softmax(s.masked_fill(m.mT, NEG_INF), -1), "NaN in the weights"),
    "wrong shape": (lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), -1)[0],
                    "returned shape (5, 5), expected (3, 5, 5)"),
    "in place": (in_place, "changed its argument `scores` in place"),
    "another device": (lambda s, m: torch.softmax(s.masked_fill(~m, NEG_INF), -1).to("meta"),
                       "on device 'meta'"),
    "no return": (lambda s, m: None, "`return`"),
}

test_softmax_right, test_softmax_wrong = table_tests(
    check_masked_softmax, SOFTMAX_RIGHT, SOFTMAX_WRONG, remarks=REMARKS,
    giveaways=["masked_fill(~mask", "float('-inf'))"])


@pytest.mark.parametrize("style", list(REMARKS))
def test_a_road_the_notebook_argued_against_is_correct_with_a_note(style):
    feedback = check_masked_softmax(SOFTMAX_RIGHT[style])
    assert feedback.status == CORRECT
    assert repr(feedback).splitlines()[1].startswith("Note: ")


@pytest.mark.parametrize("style", list(REMARKS))
def test_the_hint_after_a_note_goes_further_and_does_not_repeat_it(style):
    feedback = check_masked_softmax(SOFTMAX_RIGHT[style])
    hint = check_masked_softmax.hint().text
    assert hint.startswith("nothing to fix: the answer is right. To see it")
    assert feedback.remark not in hint and feedback.remark[:40] not in hint


# ---------------------------------------------------------------- mask for new queries


def new_rows(T_new, T_total):
    return causal_mask(T_total)[T_total - T_new:]


def new_rows_from_the_end(T_new, T_total):
    return causal_mask(T_total)[-T_new:]  # -0 is 0: every row when T_new = 0


def new_rows_loop(T_new, T_total):
    mask = torch.zeros(T_new, T_total, dtype=torch.bool)
    for i in range(T_new):
        mask[i, :T_total - T_new + i + 1] = True
    return mask


NEW_QUERY_RIGHT = {
    "last rows": new_rows,
    "comparison": lambda n, t: torch.arange(t)[None, :] <= torch.arange(t - n, t)[:, None],
    "tril with offset": lambda n, t: torch.ones(n, t, dtype=torch.bool).tril(diagonal=t - n),
    "loop": new_rows_loop,
    "NumPy": lambda n, t: torch.from_numpy(np.tril(np.ones((n, t), dtype=bool), k=t - n)),
}

NEW_QUERY_WRONG = {
    "counted from the end, [-T_new:]": (new_rows_from_the_end, "in Python -0 is 0"),
    "inverted, for masked_fill": (lambda n, t: ~new_rows(n, t), "True and False are swapped"),
    "triu blocked rows": (lambda n, t: ones(t).triu(diagonal=1)[t - n:],
                          "True and False are swapped"),
    "top-left, as is_causal": (lambda n, t: causal_mask(t)[:n], "is_causal=True"),
    "one row early": (lambda n, t: causal_mask(t)[t - n - 1:t - 1], "off by one"),
    "diagonal blocked": (lambda n, t: ones(t).tril(diagonal=-1)[t - n:], "its own key"),
    "one row late": (lambda n, t: ones(t).tril(diagonal=1)[t - n:], "the key right after it"),
    "all allowed": (lambda n, t: torch.ones(n, t, dtype=torch.bool), "each other's future"),
    "new keys only": (lambda n, t: causal_mask(n), "(T_new, T_new)"),
    "whole sequence": (lambda n, t: causal_mask(t), "(T_total, T_total)"),
    "transposed": (lambda n, t: new_rows(n, t).T, "rows and columns are swapped"),
    "float 0/1": (lambda n, t: new_rows(n, t).float(), "ADDED to the scores"),
    "other": (lambda n, t: new_rows(n, t).flip(1), "up to and including itself"),
    "no return": (lambda n, t: None, "`return`"),
    "another device": (lambda n, t: new_rows(n, t).to("meta"), "on device 'meta'"),
}

test_new_query_right, test_new_query_wrong = table_tests(
    check_mask_for_new_queries, NEW_QUERY_RIGHT, NEW_QUERY_WRONG)


def test_the_inverted_mask_really_attends_to_the_future_in_sdpa():
    """What the inverted-mask message says, measured with PyTorch's own function."""
    T_new, T_total = 2, 6
    generator = torch.Generator().manual_seed(0)
    queries = torch.randn(T_new, 4, generator=generator)
    keys = torch.randn(T_total, 4, generator=generator)
    values = torch.eye(T_total)  # the output is then the weights
    weights = F.scaled_dot_product_attention(queries, keys, values,
                                             attn_mask=~new_rows(T_new, T_total))
    first_new = T_total - T_new
    assert weights[0, first_new + 1:].sum() == pytest.approx(1.0)  # only the keys after it
    assert weights[-1].abs().sum() == 0  # the last new token attends to nothing


def test_strategy_one_really_makes_nan_where_the_remark_says():
    """The probe behind the strategy-1 remark: a dominating blocked score gives NaN."""
    scores = torch.tensor([[0.0, 200.0, 200.0], [0.0, 0.0, 200.0], [0.0, 0.0, 0.0]])
    assert torch.isnan(renormalised(scores, causal_mask(3))[0]).all()
    assert torch.isfinite(SOFTMAX_RIGHT["-inf then softmax"](scores, causal_mask(3))).all()
    two_by_two = torch.tensor([[0.0, 200.0], [0.0, 0.0]])  # the hint's experiment
    assert torch.isnan(renormalised(two_by_two, causal_mask(2))[0]).all()


TABLES = {
    check_blocked_positions: (BLOCKED_RIGHT, BLOCKED_WRONG),
    check_masked_softmax: (SOFTMAX_RIGHT, SOFTMAX_WRONG),
    check_mask_for_new_queries: (NEW_QUERY_RIGHT, NEW_QUERY_WRONG),
}
