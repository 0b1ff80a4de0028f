"""Exercise checks: is the learner's answer right, and if not, what is the likely mistake?

A check calls the learner's function on inputs of its own (copies: the learner's tensors are
never touched) and returns a ``Feedback`` that a notebook shows as one line:

- ``Correct: ...``
- ``Not attempted yet: ...`` while the function still raises ``NotImplementedError``;
- ``Incorrect: ...`` with a hint aimed at the mistake it recognised.

It compares the answer with the right one and with the answers the usual mistakes give,
and it never shows the expected tensor.
"""

from dataclasses import dataclass

import torch

from helpers.attention import SelfAttention
from helpers.data import example_inputs

CORRECT, NOT_ATTEMPTED, INCORRECT = "correct", "not attempted", "incorrect"


@dataclass(frozen=True)
class Feedback:
    status: str
    message: str

    def __repr__(self) -> str:
        return self.message

    @property
    def correct(self) -> bool:
        return self.status == CORRECT


def _not_attempted(name: str) -> Feedback:
    return Feedback(NOT_ATTEMPTED,
                    f"Not attempted yet: complete {name} above, then run this check again.")


def _incorrect(hint: str) -> Feedback:
    return Feedback(INCORRECT, f"Incorrect: {hint}")


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=1e-5, rtol=1e-4))


def _compare(answer, expected: torch.Tensor, mistakes, name: str, fallback: str, success: str):
    """Feedback for an answer: shape, NaN, then the right answer, then known wrong ones."""
    if answer is None:
        return _incorrect(f"{name} returned None: is a `return` missing?")
    if not isinstance(answer, torch.Tensor):
        return _incorrect(f"{name} returned a {type(answer).__name__}, expected a torch.Tensor")
    answer = answer.detach()
    if answer.shape != expected.shape:
        return _incorrect(f"{name} returned shape {tuple(answer.shape)}, "
                          f"expected {tuple(expected.shape)}")
    if _close(answer, expected):
        return Feedback(CORRECT, f"Correct: {success}")
    for wrong, hint in mistakes:
        if _close(answer, wrong):
            return _incorrect(hint)
    return _incorrect(fallback)


def _call(function, name: str, *args):
    """(answer, None) or (None, Feedback) when the function is a stub or fails."""
    try:
        return function(*(a.clone() if isinstance(a, torch.Tensor) else a for a in args)), None
    except NotImplementedError:
        return None, _not_attempted(name)
    except Exception as error:  # reported to the learner, with the hint that fits
        return None, _incorrect(f"{name} raised {type(error).__name__}: {error}")


# ---------------------------------------------------------------- notebook 01


def _softmax_check_input() -> torch.Tensor:
    # Rows far apart in size, and not square, so that the usual slips show.
    return torch.tensor([[1000.0, 1001.0, 1002.0, 999.0],
                         [-5.0, 0.0, 5.0, 1.0],
                         [2.0, 2.0, 2.0, 2.0]])


def check_stable_softmax(stable_softmax) -> Feedback:
    """Exercise: a softmax along the last dimension that survives large scores."""
    name = "stable_softmax"
    scores = _softmax_check_input()
    answer, failed = _call(stable_softmax, name, scores)
    if failed:
        if "must match the size" in failed.message:
            return _incorrect(f"{failed.message[len('Incorrect: '):]}. The row maximum has "
                              "shape (rows,); keep it as (rows, 1) with keepdim=True so it "
                              "lines up with each row.")
        return failed
    expected = torch.softmax(scores, dim=-1)
    if isinstance(answer, torch.Tensor) and answer.shape == expected.shape:
        nan_rows = torch.isnan(answer.detach()).any(dim=-1)
        if nan_rows[0]:
            return _incorrect("NaN for the row of scores near 1000: exp(1000) overflows. "
                              "Subtract the row's maximum before exponentiating.")
        if nan_rows[1:].any():
            return _incorrect("NaN for the rows of small scores: subtract each row's own "
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
    return _compare(answer, expected, mistakes, name,
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
    answer, failed = _call(self_attention_weights, name, x, module.W_query, module.W_key)
    if failed:
        return failed
    expected, mistakes = _weights_and_mistakes(x, module)
    return _compare(answer, expected, mistakes, name,
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
    single, failed_single = _call(self_attention_weights, name, batch[0], module.W_query,
                                  module.W_key)
    if failed_single and failed_single.status == NOT_ATTEMPTED:
        return Feedback(NOT_ATTEMPTED, "Not attempted yet: complete self_attention_weights "
                                       "in exercise 2 first.")
    answer, failed = _call(self_attention_weights, name, batch, module.W_query, module.W_key)
    if failed:
        if failed_single is None:
            return _incorrect(f"it works on one sequence but fails on a batch "
                              f"({failed.message[len('Incorrect: '):]}). keys.T reverses all "
                              "the dimensions; swap only the last two: "
                              "keys.transpose(-2, -1).")
        return failed
    expected, mistakes = _weights_and_mistakes(batch, module)
    return _compare(answer, expected, mistakes, name,
                    "the shape is right but the values are not: does each sequence use its "
                    "own keys (transpose(-2, -1)) and is the softmax along dim=-1?",
                    "your function handles batches.")
