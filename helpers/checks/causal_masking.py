"""Checks for notebook 02's exercises: the blocked positions with ``triu``, a masked softmax,
and the ``attn_mask`` for new queries after a cache."""

import torch

from helpers.attention import causal_mask
from helpers.checks.feedback import (
    Feedback,
    call,
    compare,
    correct,
    incorrect,
    tensor_problem,
)

NEG_INF = float("-inf")


def _ones(rows: int, columns: int) -> torch.Tensor:
    return torch.ones(rows, columns, dtype=torch.bool)


def _boolean_problem(answer, name: str, shape, use: str):
    """Feedback when ``answer`` is not a boolean tensor of ``shape``, else None."""
    problem = tensor_problem(answer, name)
    if problem:
        return problem
    if answer.dtype != torch.bool:
        return incorrect(f"{name} returned a {answer.dtype} tensor; the mask must be boolean "
                         f"({use}). Start from torch.ones(..., dtype=torch.bool), or call "
                         ".bool() on a 0/1 tensor.")
    return tensor_problem(answer, name, shape)


def _mask_feedback(answer: torch.Tensor, expected: torch.Tensor, mistakes, fallback: str):
    """None when the mask is right, else the hint of the first mistake it equals."""
    if torch.equal(answer, expected):
        return None
    for wrong, hint in mistakes:
        if wrong.shape == answer.shape and torch.equal(answer, wrong):
            return incorrect(hint)
    return incorrect(fallback)


# ---------------------------------------------------------------- exercise 1


def _blocked_mistakes(T: int):
    ones = _ones(T, T)
    return [
        (ones.tril(),
         "these are the positions that MAY attend (tril keeps the lower triangle and the "
         "diagonal). blocked_positions wants the opposite, what masked_fill needs: True above "
         "the diagonal, where the key comes after the query. Use triu(diagonal=1)."),
        (ones.triu(),
         "the diagonal is blocked too: no token may attend to itself, and the first token to "
         "nothing at all (its row becomes NaN). triu(diagonal=1) starts one above the "
         "diagonal."),
        (ones.tril(diagonal=-1),
         "True below the diagonal blocks the keys BEFORE each query, its past. The keys to "
         "block come after the query: above the diagonal, with triu."),
        (ones.triu(diagonal=2),
         "diagonal=2 is one too far: query i may still attend to key i + 1, the next token. "
         "triu(diagonal=1) blocks every key after the query."),
        (~ones,
         "nothing is blocked: every query would see every key, the future included."),
    ]


def check_blocked_positions(blocked_positions) -> Feedback:
    """Exercise: blocked_positions(T) -> (T, T) boolean, True where the key is after the query."""
    name = "blocked_positions"
    for T in (5, 1, 2, 3, 4, 6, 7):  # T = 5 first: every slip shows there
        answer, failed = call(blocked_positions, name, T)
        if failed:
            return failed
        problem = _boolean_problem(answer, name, (T, T), "masked_fill only takes boolean masks")
        if problem:
            return problem
        expected = _ones(T, T).triu(diagonal=1)
        wrong = _mask_feedback(answer, expected, _blocked_mistakes(T),
                               f"wrong for T = {T}: blocked_positions(T) is True exactly where "
                               "the key comes after the query (column j > row i).")
        if wrong:
            return wrong
    return correct("blocked_positions(T) is True above the diagonal, the complement of the "
                   "causal mask, for T = 1 to 7.")


# ---------------------------------------------------------------- exercise 2


def _softmax_cases():
    """(scores, mask): a batch of scores, with the causal mask and a window of two keys."""
    generator = torch.Generator().manual_seed(2)
    scores = torch.randn(2, 5, 5, generator=generator) * 2  # (B, T, T)
    causal = causal_mask(5)  # (T, T)
    window = causal & ~_ones(5, 5).tril(diagonal=-2)  # (T, T): itself and the key before
    return [(scores, causal), (scores, window)]


def _masked_softmax_mistakes(scores: torch.Tensor, mask: torch.Tensor):
    blocked_to_neg_inf = scores.masked_fill(~mask, NEG_INF)
    mistakes = [
        (torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0),
         "the blocked weights are set to 0 after the softmax, so the allowed weights no longer "
         "sum to 1 (a query that may see one key keeps only that key's share of the full "
         "softmax). Renormalise each row by its sum, or set the blocked SCORES to -inf before "
         "the softmax."),
        (torch.softmax(scores.masked_fill(mask, NEG_INF), dim=-1),
         "the mask is inverted: `mask` is True where a query MAY attend, and masked_fill "
         "writes where its argument is True, so it needs the blocked positions: ~mask."),
        (torch.softmax(scores, dim=-1).masked_fill(mask, 0.0),
         "the mask is inverted, and applied after the softmax: `mask` is True where a query "
         "MAY attend. Fill the blocked scores, scores.masked_fill(~mask, float('-inf')), "
         "then take the softmax."),
        (torch.softmax(scores.masked_fill(~mask, 0.0), dim=-1),
         "the blocked scores are set to 0, but a score of 0 still gets weight e^0 = 1 in the "
         "softmax: the query keeps attending to blocked keys. Fill them with float('-inf')."),
        (torch.softmax(scores + mask, dim=-1),
         "the boolean mask was added to the scores as numbers (True = 1, False = 0), so "
         "nothing is blocked. Use scores.masked_fill(~mask, float('-inf'))."),
        (torch.softmax(blocked_to_neg_inf, dim=-2),
         "the softmax runs down the columns (dim=-2): each column sums to 1, not each row. "
         "A row is one query's weights: softmax along dim=-1."),
        (torch.softmax(blocked_to_neg_inf, dim=0),
         "the softmax runs over dim=0, across the batch: a row of one query's weights is the "
         "last dimension, dim=-1."),
        (torch.softmax(scores, dim=-1),
         "nothing is masked: every query attends to every key. Set the blocked scores to "
         "-inf with scores.masked_fill(~mask, float('-inf')) before the softmax."),
    ]
    causal = causal_mask(scores.shape[-1])
    if not torch.equal(mask, causal):
        mistakes.append((torch.softmax(scores.masked_fill(~causal, NEG_INF), dim=-1),
                         "this is the causal mask, not the mask passed in: use the `mask` "
                         "argument, whatever it holds."))
    return mistakes


def check_masked_softmax(masked_softmax) -> Feedback:
    """Exercise: masked_softmax(scores, mask), mask True = may attend, rows summing to 1."""
    name = "masked_softmax"
    for scores, mask in _softmax_cases():
        answer, failed = call(masked_softmax, name, scores, mask)
        if failed:
            return failed
        expected = torch.softmax(scores.masked_fill(~mask, NEG_INF), dim=-1)
        fallback = ("these are not the masked weights: -inf on the blocked scores "
                    "(masked_fill(~mask, ...)), then a softmax along dim=-1.")
        result = compare(answer, expected, _masked_softmax_mistakes(scores, mask), name,
                         fallback, "")
        if result.message == incorrect(fallback).message and torch.isnan(answer).any():
            return incorrect("NaN in the weights: a row whose scores are all -inf gives 0/0. "
                             "Every row of these masks has an allowed key, so the -inf went "
                             "where the mask is True: fill ~mask.")
        if not result.correct:
            return result
    return correct("blocked keys get weight 0 and each row sums to 1, for the causal mask and "
                   "for another mask.")


# ---------------------------------------------------------------- exercise 3


def _new_query_mistakes(T_new: int, T_total: int):
    rows = causal_mask(T_total)  # (T_total, T_total): the full sequence's mask
    ones = _ones(T_total, T_total)
    mistakes = [
        (~rows[-T_new:],
         "True and False are swapped: this mask is True where a new query may NOT attend. "
         "F.scaled_dot_product_attention reads a boolean attn_mask as True = may attend, so "
         "with this one each new token would attend only to the tokens after it, and the last "
         "one to nothing. Pass the may-attend mask (or invert this one with ~)."),
        (ones.tril(diagonal=-1)[-T_new:],
         "each new token is blocked from its own key, the diagonal (these are the rows one "
         "token too early: off by one). A token attends to itself: the last new token is the "
         "last row of causal_mask(T_total), row T_total - 1."),
        (ones.tril(diagonal=1)[-T_new:],
         "off by one the other way: each new token may attend to the key right after it. "
         "New query i is token T_total - T_new + i and sees keys up to itself."),
    ]
    if T_new < T_total:
        mistakes.append(
            (rows[:T_new],
             "these are the rows of the FIRST tokens, what is_causal=True builds when there "
             "are fewer queries than keys (it aligns them top-left). The new queries are the "
             "LAST rows of causal_mask(T_total)."))
    if T_new > 1:
        mistakes.append((_ones(T_new, T_total),
                         "every new query sees every key: the new tokens see each other's "
                         "future (the first new token must not see the second). All True is "
                         "right only for a single new token."))
    return mistakes


def _new_query_shape_hint(shape, T_new: int, T_total: int):
    if shape == (T_new, T_new):
        return (f"shape (T_new, T_new) = {shape} covers only the new tokens' keys; the new "
                "queries attend to all T_total keys, the cached ones included: shape "
                "(T_new, T_total).")
    if shape == (T_total, T_total):
        return (f"shape (T_total, T_total) = {shape} is the mask of the whole sequence; the "
                "new queries are only its last T_new rows.")
    if shape == (T_total, T_new):
        return ("rows and columns are swapped: a row per query (T_new of them), a column per "
                "key (T_total): shape (T_new, T_total).")
    return None


def check_mask_for_new_queries(mask_for_new_queries) -> Feedback:
    """Exercise: the (T_new, T_total) attn_mask of the last T_new queries, True = may attend."""
    name = "mask_for_new_queries"
    for T_new, T_total in ((3, 6), (2, 5), (1, 4), (4, 4)):  # (3, 6) tells every slip apart
        answer, failed = call(mask_for_new_queries, name, T_new, T_total)
        if failed:
            return failed
        if (isinstance(answer, torch.Tensor) and answer.dtype == torch.bool
                and tuple(answer.shape) != (T_new, T_total)):
            shape_hint = _new_query_shape_hint(tuple(answer.shape), T_new, T_total)
            if shape_hint:
                return incorrect(shape_hint)
        problem = _boolean_problem(answer, name, (T_new, T_total),
                                   "a float attn_mask is ADDED to the scores, so a 0/1 mask "
                                   "blocks nothing")
        if problem:
            return problem
        expected = causal_mask(T_total)[-T_new:]
        wrong = _mask_feedback(answer, expected, _new_query_mistakes(T_new, T_total),
                               f"wrong for T_new = {T_new}, T_total = {T_total}: new query i "
                               "is token T_total - T_new + i, and may attend to every key up "
                               "to and including itself.")
        if wrong:
            return wrong
    return correct("the new queries see exactly the keys they see in the full sequence, "
                   "cached and new, and nothing after them.")

