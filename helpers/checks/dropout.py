"""Checks for notebook 03's exercises: dropout by hand, the original dropout's inference
weights, and attention with dropout in the right place.

Checks that draw random numbers use their own ``torch.Generator``, or seed the global one
inside ``seeded``, which gives it back its state afterwards: running a check does not change
what the learner's next random draw is.
"""

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import attention_weights, causal_mask
from helpers.checks.feedback import (
    Feedback,
    attempt,
    call,
    compare,
    correct,
    incorrect,
    seeded,
    tensor_problem,
)

# ---------------------------------------------------------------- exercise 1

DROPOUT_P = 0.3


def _dropout_input() -> torch.Tensor:
    """(60, 60) weights with no zeros, so that a 0 in the result means "dropped"."""
    return torch.rand(60, 60, generator=torch.Generator().manual_seed(3)) + 0.01


def _run_dropout(my_dropout, name: str, weights: torch.Tensor, p: float, seed,
                 global_seed: int = 0):
    """The answer for p, on a copy of weights; also says whether the copy was changed.

    ``seed`` seeds the generator handed to the answer (None: no generator);
    ``global_seed`` the global generator, for an answer that draws from it.
    """
    given = weights.clone()
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    with seeded(global_seed):
        answer, failed = attempt(my_dropout, name, given, p, generator)
    return answer, failed or tensor_problem(answer, name, weights.shape), not torch.equal(
        given, weights)


def _scale_hint(scale: float, p: float):
    """The hint for kept entries multiplied by ``scale`` instead of 1 / (1 - p), or None."""
    if abs(scale - 1 / (1 - p)) < 1e-4:
        return None
    if abs(scale - 1) < 1e-4:
        return ("the kept entries are not scaled: multiply them by 1/(1 - p). Without it each "
                "weight is on average (1 - p) times itself in training, smaller than the same "
                "weight at inference, when dropout is off.")
    if abs(scale - (1 - p)) < 1e-4:
        return ("the kept entries are multiplied by 1 - p; inverted dropout DIVIDES them by "
                "1 - p, the probability of keeping, so that their average stays the same.")
    if abs(scale - 1 / p) < 1e-4:
        return ("the kept entries are divided by p, the probability of DROPPING; divide by "
                "1 - p, the probability of keeping.")
    return (f"the kept entries are multiplied by {scale:.3f}; with p = {p} they must be "
            f"multiplied by 1/(1 - p) = {1 / (1 - p):.3f}.")


def check_my_dropout(my_dropout) -> Feedback:
    """Exercise: my_dropout(weights, p, generator) with torch.rand, scaled by 1/(1 - p)."""
    name = "my_dropout"
    p, weights = DROPOUT_P, _dropout_input()
    answer, failed, changed = _run_dropout(my_dropout, name, weights, p, seed=0)
    if failed:
        return failed
    if changed:
        return incorrect("my_dropout changed the `weights` it was given (an in-place operation "
                         "such as mul_, masked_fill_ or an assignment into it): compute a new "
                         "tensor instead.")
    answer = answer.detach()
    if torch.isnan(answer).any():
        return incorrect(f"NaN in the result for p = {p}: each entry is either 0 or the weight "
                         "times 1/(1 - p).")
    kept = answer != 0
    fraction = kept.float().mean().item()
    if fraction == 0:
        return incorrect(f"every entry was dropped at p = {p}: keep an entry where its random "
                         "number is at least p.")
    ratios = answer[kept] / weights[kept]
    if not torch.allclose(ratios, ratios.mean().expand_as(ratios), rtol=1e-4, atol=1e-6):
        return incorrect("the kept entries are not all multiplied by the same factor: each "
                         "kept entry is its weight times 1/(1 - p), each dropped one 0.")
    if abs(fraction - p) < 0.04 < abs(fraction - (1 - p)):
        return incorrect(f"kept {fraction:.2f} of the entries, about p = {p}: that keeps where "
                         "the random number is below p. Keep where it is at least p "
                         "(rand >= p), which happens with probability 1 - p.")
    if abs(fraction - (1 - p)) > 0.04:
        return incorrect(f"kept {fraction:.2f} of the entries; with p = {p} about 1 - p = "
                         f"{1 - p:.2f} should be kept: one uniform number per entry, kept "
                         "where it is at least p.")
    hint = _scale_hint(ratios.mean().item(), p)
    if hint:
        return incorrect(hint)
    again, failed, _ = _run_dropout(my_dropout, name, weights, p, seed=0, global_seed=1)
    if failed:
        return failed
    if not torch.equal(again.detach(), answer):
        return incorrect("two calls with generators seeded alike gave different results: draw "
                         "the random numbers from the generator you were given, "
                         "torch.rand(weights.shape, generator=generator).")
    for edge, rule in ((0.0, "p = 0 must give the weights back unchanged"),
                       (1.0, "p = 1 must drop every entry: all zeros, with no 0/0")):
        result, failed, _ = _run_dropout(my_dropout, name, weights, edge, seed=0)
        if failed:
            return incorrect(f"{failed.message.removeprefix('Incorrect: ')} (for p = {edge}). "
                             f"{rule}.")
        expected = weights if edge == 0.0 else torch.zeros_like(weights)
        if not torch.equal(result.detach(), expected):
            extra = (" Dividing by 1 - p = 0 gives NaN (0/0) for the dropped entries: when "
                     "p = 1 return zeros without dividing."
                     if torch.isnan(result).any() else "")
            return incorrect(f"{rule}.{extra}")
    default, failed, _ = _run_dropout(my_dropout, name, weights, p, seed=None)
    if failed:
        return incorrect(f"{failed.message.removeprefix('Incorrect: ')} (with no generator). "
                         "generator=None must fall back to the global random numbers; "
                         "torch.rand(..., generator=None) does that.")
    return correct(f"kept {fraction:.2f} of the entries (about 1 - p = {1 - p:.1f}), each "
                   "scaled by 1/(1 - p); p = 0 and p = 1 behave, and `weights` is untouched.")


# ---------------------------------------------------------------- exercise 2


def _causal_weights() -> torch.Tensor:
    """(6, 6) causal attention weights from random scores."""
    scores = torch.randn(6, 6, generator=torch.Generator().manual_seed(30))
    return torch.softmax(scores.masked_fill(~causal_mask(6), float("-inf")), dim=-1)


def check_inference_weights(inference_weights) -> Feedback:
    """Exercise: the inference weights after training with unscaled keep-or-drop dropout."""
    name = "inference_weights"
    weights = _causal_weights()
    for p in (0.3, 0.8):  # p != 1 - p, so that the two are told apart
        answer, failed = call(inference_weights, name, weights, p)
        if failed:
            return failed
        mistakes = [
            (weights / (1 - p),
             "that is inverted dropout's TRAINING-time scaling, 1/(1 - p). Here training did "
             "not scale: it only kept or dropped, so in training a weight was on average "
             "(1 - p) times itself."),
            (weights,
             "unchanged weights are larger than what training saw: there each weight was "
             "kept only with probability 1 - p, so on average it was (1 - p) times itself."),
            (weights * p,
             "multiplied by p, the probability of DROPPING; a weight was kept with "
             "probability 1 - p."),
        ]
        result = compare(answer, weights * (1 - p), mistakes, name,
                         f"not what a weight is on average in training, for p = {p}: it is "
                         "kept with probability 1 - p and unchanged when kept.", "")
        if not result.correct:
            return result
    return correct("at inference, multiply by 1 - p; inverted dropout moves that factor into "
                   "training (as 1/(1 - p)), so that inference needs no change.")


# ---------------------------------------------------------------- exercise 3

CONTEXT_P, CONTEXT_SEED = 0.5, 123


def _context_inputs():
    """queries, keys (T=6, d_k=2) and values (T=6, d_v=3), from a generator of their own."""
    generator = torch.Generator().manual_seed(31)
    return (torch.randn(6, 2, generator=generator), torch.randn(6, 2, generator=generator),
            torch.randn(6, 3, generator=generator))


def _context_mistakes(queries, keys, values, dropout: nn.Dropout):
    """What each misplaced dropout gives, drawn after the same seed as the learner's call."""
    scores = queries @ keys.T / keys.shape[-1] ** 0.5  # (T, T)
    blocked = ~causal_mask(scores.shape[-1])
    weights = attention_weights(queries, keys, is_causal=True)  # (T, T)

    def drawn(compute):
        with seeded(CONTEXT_SEED):
            return compute()

    before_softmax = ("dropout is applied before the softmax, to the scores: a dropped score "
                      "becomes 0, which still gets a weight, and the softmax renormalises each "
                      "row, so no weight is really dropped or scaled by 1/(1 - p). Dropout goes "
                      "on the weights: after the softmax, before the product with the values.")
    return [
        (drawn(lambda: torch.softmax(dropout(scores).masked_fill(blocked, float("-inf")), -1)
               @ values), before_softmax),
        (drawn(lambda: torch.softmax(dropout(scores.masked_fill(blocked, float("-inf"))), -1)
               @ values), before_softmax),
        (drawn(lambda: dropout(weights @ values)),
         "dropout is applied to the context vectors, after the product with the values. It "
         "goes on the weights: dropout(weights) @ values."),
        (drawn(lambda: weights @ dropout(values)),
         "dropout is applied to the values. It goes on the attention weights: "
         "dropout(weights) @ values."),
        (drawn(lambda: weights @ values),
         "no dropout in training mode: the dropout module is in training mode for this call, "
         "so some weights must be dropped. Apply it to the weights: dropout(weights)."),
        (drawn(lambda: dropout(torch.softmax(scores, dim=-1)) @ values),
         "the weights are not causal: each token sees the tokens after it. Mask before the "
         "softmax (attention_weights(queries, keys, is_causal=True))."),
        (drawn(lambda: (dropout(weights) * (1 - dropout.p)) @ values),
         "the kept weights are not scaled by 1/(1 - p): the dropout module already scales "
         "them; do not undo it."),
        (drawn(lambda: F.normalize(dropout(weights), p=1, dim=-1) @ values),
         "the weights are renormalised after dropout, which undoes its 1/(1 - p) scaling row "
         "by row. Leave them as dropout returns them: in training a row need not sum to 1; on "
         "average it does."),
    ]


def check_causal_context(causal_context) -> Feedback:
    """Exercise: causal context vectors with the nn.Dropout module after the softmax."""
    name = "causal_context"
    queries, keys, values = _context_inputs()
    dropout = nn.Dropout(p=CONTEXT_P)  # the check's own module, in training mode
    with seeded(CONTEXT_SEED):  # the answer gets a module of its own: it cannot change ours
        answer, failed = call(causal_context, name, queries, keys, values, nn.Dropout(CONTEXT_P))
    if failed:
        return failed
    weights = attention_weights(queries, keys, is_causal=True)  # (T, T)
    with seeded(CONTEXT_SEED):
        expected = dropout(weights) @ values  # (T, d_v)
    result = compare(answer, expected, _context_mistakes(queries, keys, values, dropout), name,
                     "in training mode these are not the context vectors: causal weights, "
                     "dropout(weights), then @ values.", "")
    if not result.correct:
        return result
    with seeded(CONTEXT_SEED):
        answer, failed = call(causal_context, name, queries, keys, values,
                              nn.Dropout(CONTEXT_P).eval())
    if failed:
        return failed
    plain = weights @ values
    with seeded(CONTEXT_SEED):
        always_dropped = F.dropout(weights, CONTEXT_P, training=True) @ values
    result = compare(answer, plain, [(always_dropped, (
        "in eval mode weights are still dropped: call the module, dropout(weights), which "
        "follows its train()/eval() mode; F.dropout(..., training=True) does not."))], name,
        "in eval mode the context vectors must be those without dropout: "
        "attention_weights(...) @ values.", "")
    if not result.correct:
        return result
    return correct("dropout on the weights, after the softmax and before the values, and only "
                   "in training mode.")
