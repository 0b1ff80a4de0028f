"""Checks for notebook 01's exercises: a stable softmax, attention weights from the
projections, and the same for one sequence or a batch.

The inputs are unlike the notebook's running example (T = 6, d_in = 3, d_k = 2), so an
answer that reads the notebook's globals or hard-codes its sizes is caught.
"""

import torch
from torch import nn

from helpers.checks.feedback import (
    Feedback,
    close,
    compare,
    correct,
    exercise_check,
    hint_of,
    incorrect,
    run,
    shape_text,
    tensor_problem,
    with_context,
)

# ---------------------------------------------------------------- exercise 1


def _softmax_cases():
    """(scores, what they test), in the order tried: values first, then overflow, then
    shapes. Each has a generator of its own."""
    generator = torch.Generator().manual_seed(11)
    square = torch.randn(5, 5, generator=generator) * 3  # a keepdim slip still broadcasts here
    large = torch.stack([
        torch.tensor([1000.0, 1001.0, 1002.0, 999.0, 1000.5, 998.0, 1001.5, 1000.0]),
        torch.tensor([-1000.0, -1001.0, -999.0, -1000.0, -1002.0, -999.5, -1000.0, -1001.0]),
        torch.tensor([0.0] * 7 + [95.0]),  # overflows after subtracting the minimum
        torch.tensor([-500.0] * 4 + [500.0] + [-500.0] * 3),  # ... the minimum or the mean
    ])  # (4, 8)
    return [
        (square, "scores of shape (5, 5)"),
        (large, "scores of shape (4, 8) holding large values"),
        (torch.randn(2, 3, 6, generator=generator) * 3, "scores of shape (2, 3, 6)"),
        (torch.randn(2, 3, 4, 5, generator=generator) * 40, "scores of shape (2, 3, 4, 5)"),
        (torch.randn(7, generator=generator), "scores of shape (7,)"),
    ]


def _exp_over_sum(exponentials, sum_dim=-1, keepdim=True):
    return exponentials / exponentials.sum(dim=sum_dim, keepdim=keepdim)


def _softmax_mistakes(scores: torch.Tensor):
    """(wrong weights, Feedback) for each usual slip, computed in scores' dtype; slips that
    cannot broadcast on these scores are left out."""
    last = scores.shape[-1]
    row_max = scores.max(dim=-1, keepdim=True).values
    shifted = torch.exp(scores - row_max)
    overflow_hint = ("find the row whose values are all far from 0, and work out by hand "
                     "what exp gives for its largest value after your shift.")
    candidates = [
        (lambda: _exp_over_sum(torch.exp(scores)),
         incorrect("NaN for large scores: nothing is subtracted before exp, and exp(1000) "
                   "overflows to inf (exp(-1000) underflows to 0, and 0/0 is NaN too)",
                   "which value, subtracted from every score of a row, makes the largest "
                   "exponent exactly 0?")),
        (lambda: _exp_over_sum(torch.exp(scores - scores.min(dim=-1, keepdim=True).values)),
         incorrect("NaN for a row with a wide range: subtracting the row's MINIMUM makes every "
                   "exponent >= 0, and the largest can still overflow (exp(89) is already inf "
                   "in float32, exp(710) in float64)", overflow_hint)),
        (lambda: _exp_over_sum(torch.exp(scores - scores.mean(dim=-1, keepdim=True))),
         incorrect("NaN for a row with a wide range: subtracting the row's MEAN leaves exponents "
                   "above 0, and the largest can still overflow", overflow_hint)),
        (lambda: _exp_over_sum(torch.exp(scores - scores.max())),
         incorrect("NaN (0/0) for the rows of small scores: the maximum subtracted is the "
                   "maximum of the whole tensor, so a row far below it underflows to all zeros",
                   "each row needs its own shift; the largest exponent of EVERY row should "
                   "be 0.")),
        (lambda: _exp_over_sum(torch.exp(scores - scores.max(dim=-1).values)),
         incorrect("the row maxima lost their last dimension (max without keepdim), so they "
                   "were subtracted along the wrong axis: each row got other rows' maxima",
                   "compare the shape of the maxima with the shape of the scores; broadcasting "
                   "lines up the LAST dimensions.")),
        (lambda: _exp_over_sum(shifted, keepdim=False),
         incorrect("the row sums lost their last dimension (sum without keepdim), so each "
                   "entry was divided by another row's sum",
                   "compare the shape of the sums with the shape of the exponentials; "
                   "broadcasting lines up the LAST dimensions.")),
        (lambda: shifted,
         incorrect("the exponentials are not divided by their row's sum: the rows do not sum "
                   "to 1", "a softmax has three steps; one is missing.")),
        (lambda: shifted / shifted.sum(),
         incorrect("each entry is divided by the sum of the whole tensor, not of its own row",
                   "a row's weights sum to 1 on their own: which dimension does the sum "
                   "run along?")),
        (lambda: torch.log_softmax(scores, dim=-1),
         incorrect("these are log-probabilities (log_softmax): the weights are the "
                   "exponentials divided by their sum", "weights are between 0 and 1.")),
    ]
    for dim in range(scores.ndim - 1):
        candidates.append((lambda dim=dim: torch.softmax(scores, dim=dim), incorrect(
            f"normalised along dimension {dim} of {scores.ndim}: the softmax runs along the LAST "
            f"dimension (size {last}) whatever the number of dimensions",
            "a dimension counted from the front is the last one only for one number of "
            "dimensions; count from the end.")))
    mistakes = []
    for compute, feedback in candidates:
        try:
            wrong = compute()
        except RuntimeError:  # this slip raises on these scores; the error is explained
            continue
        if wrong.shape == scores.shape:
            mistakes.append((wrong, feedback))
    return mistakes


SIZE_MISMATCH = ("must match the size",
                 "two tensors whose shapes do not line up were combined, e.g. the row maxima "
                 "or sums without their last dimension",
                 "print the shape of the maxima and of the sums; broadcasting lines up the LAST "
                 "dimensions, so each needs a last dimension of size 1.")


@exercise_check("three steps: subtract each row's largest score, exponentiate, divide by the "
                "row's sum. The check tries scores of 1 to 4 dimensions, some of them huge.")
def check_stable_softmax(stable_softmax) -> Feedback:
    """Exercise: a softmax along the last dimension that survives large scores."""
    name = "stable_softmax"
    for scores, on in _softmax_cases():
        outcome = run(stable_softmax, name, {"scores": scores}, extra_errors=[SIZE_MISMATCH])
        if outcome.failed:
            return with_context(outcome.failed, f"on {on}")
        answer = outcome.answer
        expected = torch.softmax(scores, dim=-1)
        problem = tensor_problem(answer, name, expected)
        if problem:
            return with_context(problem, f"on {on}")
        if close(answer, expected):
            continue
        inputs = scores.to(answer.dtype)  # a float64 answer is judged in float64
        fallback = incorrect("not a softmax of each row: the weights differ from "
                             "torch.softmax's", "check the three steps one at a time on a "
                                                "small row you can work out by hand.")
        if not torch.isfinite(answer.detach()).all():
            fallback = incorrect("NaN or inf in the weights, where every weight should be "
                                 "finite", "find which step first makes inf or NaN on this "
                                           "input: print after each one.")
        return with_context(compare(answer, expected, _softmax_mistakes(inputs), name,
                                    fallback), f"on {on}")
    return correct("no overflow, and the same weights as torch.softmax along the last "
                   "dimension, for 1 to 4 dimensions.")


# ---------------------------------------------------------------- exercises 2 and 3

NOTEBOOK_D_K, NOTEBOOK_D_IN, NOTEBOOK_T = 2, 3, 6  # the running example's sizes


def _projections(d_in: int, d_k: int, bias: bool, seed: int):
    generator = torch.Generator().manual_seed(seed)
    W_query, W_key = nn.Linear(d_in, d_k, bias=bias), nn.Linear(d_in, d_k, bias=bias)
    with torch.no_grad():
        for layer in (W_query, W_key):
            layer.weight.copy_(torch.randn(d_k, d_in, generator=generator))
            if bias:
                layer.bias.copy_(torch.randn(d_k, generator=generator))
    return W_query, W_key


def _weight_cases(batched: bool):
    """(x, W_query, W_key, what it is), sizes unlike the notebook's; for the batched
    exercise both one sequence and batches."""
    generator = torch.Generator().manual_seed(12)
    sizes = [(7, 5, 4, False), (5, 4, 4, True), (3, 4, 6, False)]  # (T, d_in, d_k, bias)
    cases = []
    for index, (T, d_in, d_k, bias) in enumerate(sizes):
        W_query, W_key = _projections(d_in, d_k, bias, seed=100 + index)
        what = f"W_query and W_key nn.Linear({d_in}, {d_k}{', bias=True' if bias else ''})"
        x = torch.randn(T, d_in, generator=generator) * 0.7
        cases.append((x, W_query, W_key, f"one sequence x of shape {shape_text(x.shape)}, {what}"))
        if batched:
            batch = torch.randn(3, T, d_in, generator=generator) * 0.7
            cases.append((batch, W_query, W_key,
                          f"a batch x of shape {shape_text(batch.shape)}, {what}"))
    return cases


def _scaled(scores, scale, dim=-1):
    return torch.softmax(scores / scale, dim=dim)


def _weight_mistakes(x: torch.Tensor, W_query: nn.Linear, W_key: nn.Linear):
    """(wrong weights, Feedback) for the usual slips on x (..., T, d_in)."""
    queries, keys = W_query(x), W_key(x)
    scores = queries @ keys.transpose(-2, -1)  # (..., T, T)
    T, d_in, d_k = x.shape[-2], x.shape[-1], keys.shape[-1]
    own_size = ("the size of a key is the last dimension of the keys you computed; a fixed "
                "number is right for one layer size only.")
    mistakes = [
        (_scaled(scores, 1.0), incorrect(
            "the scores are not scaled: without the scale, large d_k makes the softmax "
            "nearly one-hot", "notebook 01 divides the scores before the softmax; by what?")),
        (_scaled(scores, d_in**0.5), incorrect(
            f"scaled by sqrt(d_in) = sqrt({d_in}); the scale uses d_k = {d_k}, the size of "
            "a key", "the scores are dot products of queries and keys, not of inputs: the "
                     "scale is the size of a key, the last dimension of the keys.")),
        (_scaled(scores, d_k), incorrect(
            f"scaled by d_k = {d_k}; the scale is its square root", "the variance of a dot "
            "product grows like d_k, its spread like the square root of d_k.")),
        (_scaled(scores, d_k**0.5, dim=-2), incorrect(
            "the columns sum to 1, not the rows: the softmax ran along the queries",
            "a row is one query's weights over the keys; the keys are the last dimension.")),
        (_scaled(scores.transpose(-2, -1), d_k**0.5), incorrect(
            "keys @ queries puts the keys in the rows: these weights are transposed",
            "row i should hold query i's weights: which factor comes first in the product?")),
        (_scaled(x @ x.transpose(-2, -1), d_k**0.5), incorrect(
            "these come from the raw inputs: the queries and keys are the projections of x",
            "the two layers you were given project x; where are they used?")),
    ]
    if T not in (d_k, d_in):
        mistakes.append((_scaled(scores, T**0.5), incorrect(
            f"scaled by sqrt(T) = sqrt({T}): keys.shape[0] (or keys.shape[1] on a batch) is "
            "the number of tokens; the size of a key is the last dimension", own_size)))
    for constant in {NOTEBOOK_D_K, NOTEBOOK_D_IN, NOTEBOOK_T} - {d_k}:
        mistakes.append((_scaled(scores, constant**0.5), incorrect(
            f"scaled by sqrt({constant}), a size of the notebook's running example, not of "
            f"these inputs (d_k = {d_k})", own_size)))
    if W_query.bias is not None:
        bare_q, bare_k = x @ W_query.weight.T, x @ W_key.weight.T
        mistakes.append((_scaled(bare_q @ bare_k.transpose(-2, -1), d_k**0.5), incorrect(
            "the layers' biases are left out: x @ W.weight.T is only part of what an "
            "nn.Linear computes", "calling the layer does the whole projection.")))
    if d_in == d_k:
        raw_q, raw_k = x @ W_query.weight, x @ W_key.weight
        if W_query.bias is not None:
            raw_q, raw_k = raw_q + W_query.bias, raw_k + W_key.bias
        mistakes.append((_scaled(raw_q @ raw_k.transpose(-2, -1), d_k**0.5), incorrect(
            "x @ W.weight multiplies by the weight the wrong way round: nn.Linear keeps its "
            "weight as (out_features, in_features)", "calling the layer does the "
                                                     "projection the right way round.")))
    return mistakes


BATCH_MIXED = ("must match the size",
               "the batch dimensions of the two factors do not line up: a transpose moved the "
               "batch dimension",
               "only the last two dimensions of the keys should swap; the batch stays first.")

MATMUL = ("cannot be multiplied",
          "a matrix product whose inner sizes differ (in A @ B the last size of A must equal "
          "the first of B). nn.Linear keeps its weight as (out_features, in_features), and "
          "queries @ keys needs the keys turned so that d_k meets d_k",
          "print the shapes of the two factors of the failing product.")


def _check_weights(function, name: str, batched: bool, success: str) -> Feedback:
    single_worked = False
    for x, W_query, W_key, on in _weight_cases(batched):
        outcome = run(function, name, {"x": x, "W_query": W_query, "W_key": W_key},
                      extra_errors=[MATMUL, BATCH_MIXED] if x.ndim == 3 else [MATMUL])
        if outcome.failed:
            feedback = with_context(outcome.failed, f"on {on}")
            if x.ndim == 3 and single_worked and outcome.error is not None:
                return incorrect(f"it works on one sequence but not on a batch. "
                                 f"{hint_of(feedback)}", feedback.hint_text)
            return feedback
        with torch.no_grad():
            expected = _scaled(W_query(x) @ W_key(x).transpose(-2, -1), W_key.out_features**0.5)
            result = compare(outcome.answer, expected, _weight_mistakes(x, W_query, W_key),
                             name, incorrect("these are not the attention weights",
                                             "project x with both layers, score every query "
                                             "against every key, scale, softmax each row."))
        if not result.correct:
            return with_context(result, f"on {on}")
        single_worked = single_worked or x.ndim == 2
    return correct(success)


@exercise_check("the notebook's cells on scores and scaling are the steps, in order: project, "
                "score every query against every key, scale by sqrt(d_k), softmax each row.")
def check_self_attention_weights(self_attention_weights) -> Feedback:
    """Exercise: (T, T) attention weights from the W_query and W_key projections."""
    return _check_weights(self_attention_weights, "self_attention_weights", batched=False,
                          success="your weights match SelfAttention's, for layers of three "
                                  "sizes.")


@exercise_check("write it so that nothing depends on the number of dimensions: swap the last "
                "two dimensions of the keys, softmax along the last one, take sizes from "
                "the tensors. The check tries one sequence and batches.")
def check_batched_self_attention_weights(batched_self_attention_weights) -> Feedback:
    """Exercise: the same weights for one sequence (T, d_in) and a batch (B, T, d_in)."""
    return _check_weights(batched_self_attention_weights, "batched_self_attention_weights",
                          batched=True, success="your function gives each sequence its own "
                                                "weights, alone or in a batch.")
