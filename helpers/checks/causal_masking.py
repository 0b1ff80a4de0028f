"""Checks for notebook 02's exercises: the blocked positions with ``triu``, a masked softmax,
and the ``attn_mask`` for new queries after a cache."""

import torch

from helpers.attention import causal_mask
from helpers.checks.feedback import (
    Feedback,
    compare,
    correct,
    exercise_check,
    incorrect,
    run,
    shape_text,
    tensor_problem,
    with_context,
)

NEG_INF = float("-inf")


def _ones(rows: int, columns: int) -> torch.Tensor:
    return torch.ones(rows, columns, dtype=torch.bool)


def _mask_feedback(answer: torch.Tensor, expected: torch.Tensor, mistakes, fallback: Feedback):
    """None when the mask is right, else the Feedback of the first mistake it equals."""
    if torch.equal(answer, expected):
        return None
    for wrong, feedback in mistakes:
        if wrong.shape == answer.shape and torch.equal(answer, wrong):
            return feedback
    return fallback


# ---------------------------------------------------------------- exercise 1

DIAGONAL_HINT = "triu's `diagonal` argument moves the edge of the triangle up or down."


def _blocked_mistakes(T: int):
    ones = _ones(T, T)
    return [
        (ones.tril(), incorrect(
            "these are the positions that MAY attend (the lower triangle and the diagonal); "
            "blocked_positions wants the opposite, what masked_fill needs: True where the "
            "key comes after the query", "which triangle holds the keys after each query?")),
        (ones.triu(), incorrect(
            "the diagonal is blocked too: no token may attend to itself, and the first token "
            "to nothing at all (its row becomes NaN)", DIAGONAL_HINT)),
        (ones.tril(diagonal=-1), incorrect(
            "True below the diagonal blocks the keys BEFORE each query, its past; the keys to "
            "block come after it", "which triangle holds the keys after each query?")),
        (ones.triu(diagonal=2), incorrect(
            "one diagonal too far: query i may still attend to key i + 1, the next token",
            DIAGONAL_HINT)),
        (~ones, incorrect("nothing is blocked: every query would see every key, the future "
                          "included", "which positions are in the future of query i?")),
        (ones, incorrect("everything is blocked: no query could attend to anything",
                         "a query may see itself and the keys before it.")),
    ]


@exercise_check("draw the (T, T) grid for T = 3 with queries as rows and keys as columns, and "
                "mark the cells where the key comes after the query: which triangle is it, "
                "and does it include the diagonal?")
def check_blocked_positions(blocked_positions) -> Feedback:
    """Exercise: blocked_positions(T) -> (T, T) boolean, True where the key is after the query."""
    name = "blocked_positions"
    for T in (5, 1, 2, 8, 11, 3):  # T = 5 first: every slip shows there
        outcome = run(blocked_positions, name, {"T": T})
        if outcome.failed:
            return with_context(outcome.failed, f"for T = {T}")
        expected = _ones(T, T).triu(diagonal=1)
        problem = tensor_problem(outcome.answer, name, expected, kind="bool")
        if problem:
            return with_context(problem, f"for T = {T}")
        wrong = _mask_feedback(outcome.answer, expected, _blocked_mistakes(T), incorrect(
            "not the blocked positions: True exactly where the key comes after the query "
            "(column j > row i)", "print your mask for T = 3 and compare it with the grid "
            "you expect."))
        if wrong:
            return with_context(wrong, f"for T = {T}")
    return correct("blocked_positions(T) is True above the diagonal, the complement of the "
                   "causal mask, for T = 1 to 11.")


# ---------------------------------------------------------------- exercise 2


def _softmax_cases():
    """(scores, mask, what): batches, 4-D scores, masks that broadcast, not only causal."""
    generator = torch.Generator().manual_seed(2)
    causal = causal_mask(5)  # (T, T)
    window = causal & ~_ones(5, 5).tril(diagonal=-2)  # (T, T): itself and the key before
    lengths = torch.tensor([4, 2])
    keys = torch.arange(4)[None, :] < lengths[:, None]  # (B, T): real keys first
    per_sequence = (causal_mask(4) & keys[:, None, :])[:, None]  # (B, 1, T, T)
    pattern = torch.rand(7, 7, generator=generator) < 0.5
    pattern[torch.arange(7), torch.randint(0, 7, (7,), generator=generator)] = True  # a key each
    return [
        (torch.randn(3, 5, 5, generator=generator) * 2, causal,
         "scores (3, 5, 5) with the causal mask (5, 5)"),
        (torch.randn(3, 5, 5, generator=generator) * 2, window,
         "scores (3, 5, 5) with a mask that allows each token and the one before"),
        (torch.randn(2, 3, 4, 4, generator=generator) * 2, per_sequence,
         "scores (2, 3, 4, 4) with a mask (2, 1, 4, 4)"),
        (torch.randn(7, 7, generator=generator) * 30, pattern,
         "scores (7, 7) with a mask that is not causal"),
    ]


def _masked_softmax_mistakes(scores: torch.Tensor, mask: torch.Tensor):
    mask = mask.expand(scores.shape)
    blocked = scores.masked_fill(~mask, NEG_INF)
    minus_inf_hint = ("exp(-inf) is exactly 0: which scores should hold -inf, and does that "
                      "happen before or after the softmax?")
    inverted_hint = ("the mask is True where a query MAY attend; masked_fill writes where its "
                     "mask is True.")
    mistakes = [
        (torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0), incorrect(
            "the blocked weights are set to 0 after the softmax, so the allowed weights no "
            "longer sum to 1 (a query that may see one key keeps only that key's share of "
            "the full softmax)", "strategy 1 of the notebook had one more step after "
                                 "zeroing; strategy 2 changes the scores instead.")),
        (torch.softmax(scores.masked_fill(mask, NEG_INF), dim=-1), incorrect(
            "the mask is inverted: -inf went to the scores a query MAY attend to",
            inverted_hint)),
        (torch.softmax(scores, dim=-1).masked_fill(mask, 0.0), incorrect(
            "the mask is inverted, and applied after the softmax", inverted_hint)),
        (torch.softmax(scores.masked_fill(~mask, 0.0), dim=-1), incorrect(
            "the blocked scores are set to 0, but a score of 0 still gets weight e^0 = 1 in "
            "the softmax: the query keeps attending to blocked keys", minus_inf_hint)),
        (torch.softmax(scores + mask, dim=-1), incorrect(
            "the boolean mask was added to the scores as numbers (True = 1, False = 0), so "
            "nothing is blocked", minus_inf_hint)),
        (torch.softmax(scores, dim=-1), incorrect(
            "nothing is masked: every query attends to every key", minus_inf_hint)),
        (torch.softmax(scores * mask, dim=-1), incorrect(
            "the scores were multiplied by the mask: a blocked score becomes 0, which still "
            "gets weight e^0 = 1", minus_inf_hint)),
    ]
    for dim in range(scores.ndim - 1):
        mistakes.append((torch.softmax(blocked, dim=dim), incorrect(
            f"the softmax runs along dimension {dim} of {scores.ndim}, not the last one: a row "
            "of one query's weights is the last dimension, whatever comes before it",
            "count dimensions from the end, and the same code works for 2, 3 or 4 "
            "dimensions.")))
    causal = causal_mask(scores.shape[-1]).expand(scores.shape)
    if not torch.equal(mask, causal):
        mistakes.append((torch.softmax(scores.masked_fill(~causal, NEG_INF), dim=-1), incorrect(
            "this is the causal mask, not the mask passed in", "use the `mask` argument, "
                                                               "whatever it holds.")))
    return mistakes


def _strategy_remark(masked_softmax, name: str):
    """(remark, hint) for a right answer that took a road the notebook argued against, or
    ('', ''); the hint says how to see for oneself what the remark says."""
    # A blocked score far above the allowed ones: strategy 1's first softmax gives the
    # allowed keys weights that underflow to 0, and renormalising divides 0 by 0.
    dominated = torch.tensor([[0.0, 200.0, 200.0], [0.0, 0.0, 200.0], [0.0, 0.0, 0.0]])
    outcome = run(masked_softmax, name, {"scores": dominated, "mask": causal_mask(3)})
    if (outcome.failed is None and isinstance(outcome.answer, torch.Tensor)
            and outcome.answer.shape == dominated.shape
            and not torch.isfinite(outcome.answer.detach()).all()):
        return ("your weights are right on the check's scores, but you renormalise after a "
                "softmax over every key (the notebook's strategy 1): when a blocked score is "
                "far above the allowed ones, their weights underflow to 0 and the row becomes "
                "NaN (0/0). Filling the blocked scores with -inf before one softmax cannot do "
                "that; that is why the notebook kept strategy 2.", (
                    "to see it, run your function on 2 x 2 scores whose first row is 0 and "
                    "then 200, with causal_mask(2): key 1 is blocked for query 0, and that "
                    "row comes out NaN."))
    half = torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(20)).half()
    outcome = run(masked_softmax, name, {"scores": half, "mask": causal_mask(4)})
    if outcome.error is not None and "Half without overflow" in str(outcome.error):
        return ("your weights are right in float32, but your function fails on float16 "
                "scores: a hard-coded fill such as -1e9 does not fit float16 and masked_fill "
                "refuses it, as notebook 7 shows. -inf exists in every floating dtype.", (
                    "to see it, run your function on float16 scores (.half()) with a "
                    "causal mask: masked_fill names the value it cannot convert."))
    return "", ""


@exercise_check("strategy 2 of the notebook: the blocked scores (where the mask is False) get "
                "a value whose exponential is exactly 0, then one softmax along the last "
                "dimension. The check tries 2-, 3- and 4-dimensional scores and other masks.")
def check_masked_softmax(masked_softmax) -> Feedback:
    """Exercise: masked_softmax(scores, mask), mask True = may attend, rows summing to 1."""
    name = "masked_softmax"
    for scores, mask, on in _softmax_cases():
        outcome = run(masked_softmax, name, {"scores": scores, "mask": mask})
        if outcome.failed:
            return with_context(outcome.failed, f"on {on}")
        expected = torch.softmax(scores.masked_fill(~mask, NEG_INF), dim=-1)
        fallback = incorrect("these are not the masked weights: blocked keys get weight 0, "
                             "and each row's allowed weights are a softmax of their scores",
                             "compare your weights with the mask: are the zeros where the "
                             "mask is False, and does each row sum to 1?")
        answer = outcome.answer
        if (isinstance(answer, torch.Tensor) and answer.shape == expected.shape
                and answer.is_floating_point() and answer.device == expected.device
                and torch.isnan(answer.detach()).any()):
            fallback = incorrect(
                "NaN in the weights: a row whose scores are all -inf gives 0/0. Every row of "
                "these masks has an allowed key, so the -inf went where the mask is True",
                "the mask is True where a query MAY attend; masked_fill writes where its "
                "mask is True.")
        result = compare(answer, expected, _masked_softmax_mistakes(scores, mask), name,
                         fallback)
        if not result.correct:
            return with_context(result, f"on {on}")
    remark, hint = _strategy_remark(masked_softmax, name)
    return correct("blocked keys get weight 0 and each row sums to 1, for 2- to 4-dimensional "
                   "scores and several masks.", remark=remark, hint=hint)


# ---------------------------------------------------------------- exercise 3


def _new_query_mistakes(T_new: int, T_total: int):
    rows = causal_mask(T_total)  # (T_total, T_total): the full sequence's mask
    ones = _ones(T_total, T_total)
    new = slice(T_total - T_new, None)  # the new tokens' rows (none when T_new = 0)
    off_by_one = ("new query i is token T_total - T_new + i of the whole sequence: "
                  "which keys does that token see?")
    mistakes = [
        (~rows[new], incorrect(
            "True and False are swapped: this mask is True where a new query may NOT attend. "
            "F.scaled_dot_product_attention reads a boolean attn_mask as True = may attend, "
            "so with this one each new token would attend only to the tokens after it, and "
            "the last one to nothing", "masked_fill wants the blocked positions; "
                                       "scaled_dot_product_attention the allowed ones.")),
        (ones.tril(diagonal=-1)[new], incorrect(
            "each new token is blocked from its own key, the diagonal (off by one: these are "
            "the rows one token too early)", off_by_one)),
        (ones.tril(diagonal=1)[new], incorrect(
            "off by one the other way: each new token may attend to the key right after it",
            off_by_one)),
    ]
    if T_new < T_total:
        mistakes.append((rows[:T_new], incorrect(
            "these are the rows of the FIRST tokens, what is_causal=True builds when there "
            "are fewer queries than keys (it aligns them top-left); the new queries are the "
            "last tokens of the sequence", "where in the full sequence do the new tokens "
                                           "sit?")))
    if T_new > 1:
        mistakes.append((_ones(T_new, T_total), incorrect(
            "every new query sees every key: the new tokens see each other's future (the "
            "first new token must not see the second). All True is right only for a single "
            "new token", "the new tokens among themselves are causal too.")))
    return mistakes


def _new_query_shape_hint(shape, T_new: int, T_total: int):
    if T_new == 0 and shape == (T_total, T_total):
        return incorrect(
            f"for T_new = 0 (no new token) your mask has shape (T_total, T_total) = "
            f"{shape_text(shape)}, every row, where it should have none: in Python -0 is 0, "
            "so a slice that counts the new rows from the end with -T_new starts at the "
            "first row when T_new is 0", "count the new rows' start from the front: at "
                                         "which row of the full sequence does the first new "
                                         "token sit?")
    if shape == (T_new, T_new):
        return incorrect(f"shape (T_new, T_new) = {shape_text(shape)} covers only the new "
                         "tokens' keys; the new queries attend to all T_total keys, the cached "
                         "ones included", "one row per new query, one column per key.")
    if shape == (T_total, T_total):
        return incorrect(f"shape (T_total, T_total) = {shape_text(shape)} is the mask of the "
                         "whole sequence; only the new tokens are queries now",
                         "one row per new query, one column per key.")
    if shape == (T_total, T_new):
        return incorrect("rows and columns are swapped: a row per query (T_new of them), a "
                         "column per key (T_total)", "one row per new query, one column per "
                                                     "key.")
    return None


@exercise_check("write out the full sequence's causal mask for T_total = 4 and mark which "
                "rows belong to the last T_new = 2 tokens.")
def check_mask_for_new_queries(mask_for_new_queries) -> Feedback:
    """Exercise: the (T_new, T_total) attn_mask of the last T_new queries, True = may attend."""
    name = "mask_for_new_queries"
    # T_new = 0 last: a step with no new token, where a slice counted from the end breaks.
    for T_new, T_total in ((3, 7), (2, 5), (1, 4), (4, 4), (2, 9), (5, 8), (0, 4)):
        on = f"for T_new = {T_new}, T_total = {T_total}"
        outcome = run(mask_for_new_queries, name, {"T_new": T_new, "T_total": T_total})
        if outcome.failed:
            return with_context(outcome.failed, on)
        answer = outcome.answer
        if (isinstance(answer, torch.Tensor) and answer.dtype == torch.bool
                and tuple(answer.shape) != (T_new, T_total)):
            shape_hint = _new_query_shape_hint(tuple(answer.shape), T_new, T_total)
            if shape_hint:
                return with_context(shape_hint, on)
        expected = causal_mask(T_total)[T_total - T_new:]  # the last T_new rows, maybe none
        problem = tensor_problem(answer, name, expected, kind="bool")
        if problem:
            if "must be boolean" in problem.message:
                problem = incorrect(f"{name} returned a {answer.dtype} tensor; the mask must be "
                                    "boolean: a float attn_mask is ADDED to the scores, so a "
                                    "0/1 mask blocks nothing", problem.hint_text)
            return with_context(problem, on)
        wrong = _mask_feedback(answer, expected, _new_query_mistakes(T_new, T_total), incorrect(
            "new query i is token T_total - T_new + i, and may attend to every key up to and "
            "including itself; this mask differs", "print your mask for small sizes and "
                                                   "compare it row by row."))
        if wrong:
            return with_context(wrong, on)
    return correct("the new queries see exactly the keys they see in the full sequence, "
                   "cached and new, and nothing after them, down to a step with no new token.")
