"""Checks for notebook 01's exercises: a stable softmax, attention weights from the
projections, and the same on a batch."""

import torch

from helpers.attention import SelfAttention
from helpers.checks.feedback import (
    NOT_ATTEMPTED,
    Feedback,
    call,
    compare,
    hint_of,
    incorrect,
)
from helpers.data import example_inputs


def _softmax_check_input() -> torch.Tensor:
    # Rows far apart in size, and not square, so that the usual slips show.
    return torch.tensor([[1000.0, 1001.0, 1002.0, 999.0],
                         [-5.0, 0.0, 5.0, 1.0],
                         [2.0, 2.0, 2.0, 2.0]])


def check_stable_softmax(stable_softmax) -> Feedback:
    """Exercise: a softmax along the last dimension that survives large scores."""
    name = "stable_softmax"
    scores = _softmax_check_input()
    answer, failed = call(stable_softmax, name, scores)
    if failed:
        if "must match the size" in failed.message:
            return incorrect(f"{hint_of(failed)}. The row maximum has "
                             "shape (rows,); keep it as (rows, 1) with keepdim=True so it "
                             "lines up with each row.")
        return failed
    expected = torch.softmax(scores, dim=-1)
    if isinstance(answer, torch.Tensor) and answer.shape == expected.shape:
        nan_rows = torch.isnan(answer.detach()).any(dim=-1)
        if nan_rows[0]:
            return incorrect("NaN for the row of scores near 1000: exp(1000) overflows. "
                             "Subtract the row's maximum before exponentiating.")
        if nan_rows[1:].any():
            return incorrect("NaN for the rows of small scores: subtract each row's own "
                             "maximum (max along dim=-1, keepdim=True), not the maximum of "
                             "the whole tensor.")
    shifted = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
    mistakes = [
        (torch.softmax(scores, dim=0), "each column sums to 1, not each row: "
                                       "normalise along dim=-1."),
        (shifted, "the exponentials are right, but divide them by their row's sum."),
        (shifted / shifted.sum(), "divide by each row's own sum (dim=-1, keepdim=True), "
                                  "not the sum of the whole tensor."),
    ]
    return compare(answer, expected, mistakes, name,
                   "not a softmax of each row. Check the three steps: subtract the row "
                   "maximum, exponentiate, divide by the row sum.",
                   "no overflow, and the same weights as torch.softmax.")


def _reference_module() -> SelfAttention:
    with torch.random.fork_rng():
        torch.manual_seed(789)
        return SelfAttention(d_in=3, d_out=2)


def _weights_and_mistakes(x: torch.Tensor, module: SelfAttention):
    """The right weights for x, and the weights each usual mistake gives."""
    with torch.no_grad():
        queries, keys = module.W_query(x), module.W_key(x)
        scores = queries @ keys.transpose(-2, -1)  # (..., T, T)
        d_k, d_in = keys.shape[-1], x.shape[-1]
        raw = x @ x.transpose(-2, -1)
        expected = torch.softmax(scores / d_k**0.5, dim=-1)
        mistakes = [
            (torch.softmax(scores, dim=-1),
             "the scores are not scaled: divide them by sqrt(d_k) before the softmax."),
            (torch.softmax(scores / d_in**0.5, dim=-1),
             f"scaled by sqrt(d_in) = sqrt({d_in}); the scale uses d_k = {d_k}, the size of a "
             "key (keys.shape[-1])."),
            (torch.softmax(scores / d_k, dim=-1),
             "scaled by d_k; the scale is its square root, sqrt(d_k)."),
            (torch.softmax(scores / d_k**0.5, dim=-2),
             "the columns sum to 1, not the rows: take the softmax along dim=-1 "
             "(on a batch, dim=1 is the query axis)."),
            (torch.softmax(scores.transpose(-2, -1) / d_k**0.5, dim=-1),
             "keys @ queries.T puts the keys in the rows; it is queries @ keys.T."),
            (torch.softmax(raw / d_k**0.5, dim=-1),
             "these come from the raw inputs: project them with W_query and W_key first."),
        ]
        if x.ndim == 3:
            T = x.shape[-2]
            mistakes.append((torch.softmax(scores / T**0.5, dim=-1),
                             "keys.shape[1] is T on a batch; the size of a key is "
                             "keys.shape[-1]."))
    return expected, mistakes


def check_self_attention_weights(self_attention_weights) -> Feedback:
    """Exercise: (T, T) attention weights from the W_query and W_key projections."""
    name = "self_attention_weights"
    module, x = _reference_module(), example_inputs()
    answer, failed = call(self_attention_weights, name, x, module.W_query, module.W_key)
    if failed:
        return failed
    expected, mistakes = _weights_and_mistakes(x, module)
    return compare(answer, expected, mistakes, name,
                   "these are not the weights. Project x with W_query and W_key, take "
                   "queries @ keys.T, divide by sqrt(d_k), softmax each row.",
                   "your weights match SelfAttention's.")


def _check_batch() -> torch.Tensor:
    # Three different sequences, so that B differs from d_k and from 2.
    inputs = example_inputs()
    return torch.stack([inputs, inputs.flip(0), inputs.roll(2, dims=0)])  # (3, 6, 3)


def check_batched_self_attention_weights(self_attention_weights) -> Feedback:
    """Exercise: the same function on a batch (B, T, d_in) -> (B, T, T)."""
    name = "self_attention_weights"
    module, batch = _reference_module(), _check_batch()
    single, failed_single = call(self_attention_weights, name, batch[0], module.W_query,
                                 module.W_key)
    if failed_single and failed_single.status == NOT_ATTEMPTED:
        return Feedback(NOT_ATTEMPTED, "Not attempted yet: complete self_attention_weights "
                                       "in exercise 2 first.")
    answer, failed = call(self_attention_weights, name, batch, module.W_query, module.W_key)
    if failed:
        if failed_single is None:
            return incorrect(f"it works on one sequence but fails on a batch "
                             f"({hint_of(failed)}). Swap only the last two dimensions "
                             "of the keys: keys.transpose(-2, -1) (keys.T reverses all of "
                             "them, and a transpose of other dimensions mixes the batch).")
        return failed
    expected, mistakes = _weights_and_mistakes(batch, module)
    return compare(answer, expected, mistakes, name,
                   "the shape is right but the values are not: does each sequence use its "
                   "own keys (transpose(-2, -1)) and is the softmax along dim=-1?",
                   "your function handles batches.")

