"""Checks for notebook 03's exercises: dropout by hand, the original dropout's inference
weights, and attention with dropout in the right place.

Checks that draw random numbers use their own ``torch.Generator``, or seed the global one
inside ``seeded`` (and ``Check`` gives it back its state afterwards): running a check does
not change what the learner's next random draw is.
"""

import torch
import torch.nn.functional as F

from helpers.attention import attention_weights, causal_mask
from helpers.checks.feedback import (
    DropoutSpy,
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
from helpers.seeding import seeded

# ---------------------------------------------------------------- exercise 1


def _dropout_inputs():
    """(weights, p) cases: weights with no zeros, so that a 0 in the result means dropped."""
    generator = torch.Generator().manual_seed(3)
    return [(torch.rand(60, 60, generator=generator) + 0.01, 0.3),
            (torch.rand(2, 3, 16, 16, generator=generator) + 0.01, 0.75)]


def _dropout(my_dropout, name, weights, p, seed, global_seed=0):
    """The outcome of my_dropout(weights, p, generator) with a generator seeded ``seed``
    (None: no generator) and the global generator seeded ``global_seed``."""
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    with seeded(global_seed):
        outcome = run(my_dropout, name, {"weights": weights, "p": p, "generator": generator})
    if outcome.failed is None:
        outcome.failed = tensor_problem(outcome.answer, name, weights)
    return outcome


def _scale_feedback(scale: float, p: float):
    """The Feedback for kept entries multiplied by ``scale`` instead of 1 / (1 - p), or None."""
    if abs(scale - 1 / (1 - p)) < 1e-4:
        return None
    average = ("in training each entry should be, on average over the random draws, the "
               "weight itself: work out that average for your factor.")
    if abs(scale - 1) < 1e-4:
        return incorrect("the kept entries are not scaled: each weight is then on average "
                         "(1 - p) times itself in training, smaller than at inference, when "
                         "dropout is off", average)
    if abs(scale - (1 - p)) < 1e-4:
        return incorrect("the kept entries are multiplied by 1 - p, which makes them smaller "
                         "still; inverted dropout makes up for the dropped ones", average)
    if abs(scale - 1 / p) < 1e-4:
        return incorrect("the kept entries are divided by p, the probability of DROPPING",
                         "the factor uses the probability of KEEPING an entry.")
    return incorrect(f"the kept entries are multiplied by {scale:.3f}; with p = {p} that is not "
                     "the factor of inverted dropout", average)


def _dropout_rules(answer: torch.Tensor, weights: torch.Tensor, p: float):
    """Feedback when the result breaks a rule of inverted dropout, else None."""
    answer = answer.detach()
    if torch.isnan(answer).any():
        return incorrect(f"NaN in the result for p = {p}: each entry should be either 0 or "
                         "the weight times a factor", "look for a 0/0 or a division by "
                                                      "zero.")
    kept = answer != 0
    fraction = kept.float().mean().item()
    if fraction == 0:
        return incorrect(f"every entry was dropped at p = {p}",
                         "an entry is kept where its uniform number is at least p.")
    ratios = answer[kept] / weights[kept]
    if not torch.allclose(ratios, ratios.mean().expand_as(ratios), rtol=1e-4, atol=1e-6):
        return incorrect("the kept entries are not all multiplied by the same factor: each "
                         "kept entry is its weight times one factor, each dropped one 0",
                         "the factor depends on p only.")
    tolerance = 0.04 if answer.numel() >= 3000 else 0.07
    if abs(fraction - p) < tolerance < abs(fraction - (1 - p)):
        return incorrect(f"kept {fraction:.2f} of the entries, about p = {p}: that keeps where "
                         "the random number is below p, so p is the probability of keeping",
                         "p is the probability of DROPPING an entry.")
    if abs(fraction - (1 - p)) > tolerance:
        return incorrect(f"kept {fraction:.2f} of the entries; with p = {p} about 1 - p = "
                         f"{1 - p:.2f} should be kept", "one uniform number per entry, "
                                                        "compared with p.")
    return _scale_feedback(ratios.mean().item(), p)


@exercise_check("one uniform number per entry from the generator you were given; compare "
                "it with p; keep the entries that pass, scaled so that the average stays "
                "the same. Treat p = 1 on its own.")
def check_my_dropout(my_dropout) -> Feedback:
    """Exercise: my_dropout(weights, p, generator) with torch.rand, scaled by 1/(1 - p)."""
    name = "my_dropout"
    for weights, p in _dropout_inputs():
        on = f"weights of shape {shape_text(weights.shape)}, p = {p}"
        first = _dropout(my_dropout, name, weights, p, seed=0)
        if first.failed:
            return with_context(first.failed, on)
        broken = _dropout_rules(first.answer, weights, p)
        if broken:
            return with_context(broken, on)
        again = _dropout(my_dropout, name, weights, p, seed=0, global_seed=1)
        if again.failed:
            return with_context(again.failed, on)
        if not torch.equal(again.answer.detach(), first.answer.detach()):
            return with_context(incorrect(
                "two calls with generators seeded alike gave different results: the random "
                "numbers come from the global generator, not from the one given",
                "torch's random functions take a `generator` argument."), on)
        other = _dropout(my_dropout, name, weights, p, seed=1)
        if other.failed:
            return with_context(other.failed, on)
        if torch.equal(other.answer.detach(), first.answer.detach()):
            return with_context(incorrect(
                "two generators seeded differently gave the same result: the generator "
                "passed in is ignored (does the function seed a generator of its own?)",
                "draw from the generator you were given, and leave seeding to the caller."),
                on)
    weights = _dropout_inputs()[0][0]
    for edge, rule in ((0.0, "p = 0 must give the weights back unchanged"),
                       (1.0, "p = 1 must drop every entry: all zeros")):
        outcome = _dropout(my_dropout, name, weights, edge, seed=0)
        if outcome.failed:
            return incorrect(f"{hint_of(outcome.failed)} (for p = {edge}). {rule}.",
                             outcome.failed.hint_text)
        expected = weights if edge == 0.0 else torch.zeros_like(weights)
        if not torch.equal(outcome.answer.detach(), expected):
            nan = torch.isnan(outcome.answer.detach()).any()
            return incorrect(f"{rule}." + (" Dividing by 1 - p = 0 gives NaN (0/0) for the "
                                           "dropped entries." if nan else ""),
                             "treat p = 1 on its own, before any division."
                             if nan else "at p = 0 no uniform number in [0, 1) is below p.")
    default = _dropout(my_dropout, name, weights, 0.3, seed=None)
    if default.failed:
        return incorrect(f"{hint_of(default.failed)} (with no generator). generator=None must "
                         "fall back to the global random numbers",
                         "torch's random functions accept generator=None.")
    return correct("about 1 - p of the entries kept, each scaled by 1/(1 - p), drawn from the "
                   "generator given; p = 0 and p = 1 behave, and `weights` is untouched.")


# ---------------------------------------------------------------- exercise 2


def _inference_cases():
    """(weights, p): unnormalised weights first (renormalising shows there), then causal
    attention weights, then a vector."""
    generator = torch.Generator().manual_seed(30)
    scores = torch.randn(6, 6, generator=generator)
    causal = torch.softmax(scores.masked_fill(~causal_mask(6), float("-inf")), dim=-1)
    return [(torch.rand(2, 3, 5, 5, generator=generator) + 0.1, 0.3), (causal, 0.8),
            (torch.rand(7, generator=generator), 0.55)]


@exercise_check("in training a weight was kept (unchanged) with probability 1 - p and "
                "dropped (0) otherwise: what is it on average?")
def check_inference_weights(inference_weights) -> Feedback:
    """Exercise: the inference weights after training with unscaled keep-or-drop dropout."""
    name = "inference_weights"
    average = "what is a weight on average in training: kept with probability 1 - p, else 0?"
    for weights, p in _inference_cases():
        on = f"weights of shape {shape_text(weights.shape)}, p = {p}"
        outcome = run(inference_weights, name, {"weights": weights, "p": p})
        if outcome.failed:
            return with_context(outcome.failed, on)
        scaled = weights * (1 - p)
        mistakes = [
            (weights / (1 - p), incorrect(
                "that is inverted dropout's TRAINING-time factor, 1/(1 - p). Here training "
                "did not scale: it only kept or dropped", average)),
            (weights, incorrect(
                "unchanged weights are larger than what training saw: there each weight was "
                "kept only with probability 1 - p", average)),
            (weights * p, incorrect(
                "multiplied by p, the probability of DROPPING", "a weight was kept with "
                                                                "probability 1 - p.")),
            (scaled / scaled.sum(dim=-1, keepdim=True), incorrect(
                "the rows were rescaled to sum to 1 after the factor, which undoes it: at "
                "inference the weights keep the size they had on average in training",
                "leave out the renormalisation.")),
            (weights * (1 - p) ** 2, incorrect("the factor is applied twice", average)),
        ]
        result = compare(outcome.answer, scaled, mistakes, name, incorrect(
            f"not what a weight is on average in training, for p = {p}", average))
        if not result.correct:
            return with_context(result, on)
    return correct("at inference, multiply by 1 - p; inverted dropout moves that factor into "
                   "training (as 1/(1 - p)), so that inference needs no change.")


# ---------------------------------------------------------------- exercise 3

CONTEXT_SEED = 123


def _context_cases():
    """(queries, keys, values, p): sizes unlike the notebook's, from a generator."""
    generator = torch.Generator().manual_seed(31)
    cases = []
    for T, d_k, d_v, p in ((7, 4, 3, 0.5), (4, 5, 6, 0.25)):
        cases.append((torch.randn(T, d_k, generator=generator),
                      torch.randn(T, d_k, generator=generator),
                      torch.randn(T, d_v, generator=generator), p))
    return cases


WEIGHTS_HINT = ("dropout belongs on the attention weights: after the softmax, before the "
                "product with the values.")


def _placement(seen, queries, keys, values):
    """Feedback from what the dropout module was called on, or None when that was right."""
    scores = queries @ keys.T / keys.shape[-1] ** 0.5  # (T, T)
    weights = attention_weights(queries, keys, is_causal=True)  # (T, T)
    if len(seen) > 1:
        return incorrect(f"the dropout module was called {len(seen)} times; it is applied "
                         "once, to the weights", WEIGHTS_HINT)
    given = seen[0]

    def was(tensor):
        return given.shape == tensor.shape and close(given, tensor)

    if was(weights):
        return None
    if was(scores) or was(scores.masked_fill(~causal_mask(len(keys)), float("-inf"))):
        return incorrect("dropout is applied before the softmax, to the scores: a dropped score "
                         "becomes 0, which still gets a weight, and the softmax renormalises "
                         "each row, so no weight is really dropped", WEIGHTS_HINT)
    if was(values):
        return incorrect("dropout is applied to the values, not to the attention weights",
                         WEIGHTS_HINT)
    if was(weights @ values):
        return incorrect("dropout is applied to the context vectors, after the product with "
                         "the values", WEIGHTS_HINT)
    if was(torch.softmax(scores, dim=-1)):
        return incorrect("the weights given to dropout are not causal: each token sees the "
                         "tokens after it", "the exercise's weights are the causal ones.")
    d_k = keys.shape[-1]
    if was(attention_weights(queries, keys, is_causal=True, scale=1.0)):
        return incorrect(f"the scores were not divided by sqrt(d_k) = sqrt({d_k}) before the "
                         "softmax, so the weights are not the causal attention weights",
                         "scale the scores as in notebook 01, then mask, then softmax.")
    return None


@exercise_check("the module decides by itself whether it is training: call it once, on the "
                "causal weights, and multiply what it returns by the values.")
def check_causal_context(causal_context) -> Feedback:
    """Exercise: causal context vectors with the nn.Dropout module after the softmax."""
    name = "causal_context"
    for queries, keys, values, p in _context_cases():
        on = (f"queries and keys {shape_text(queries.shape)}, values "
              f"{shape_text(values.shape)}, dropout p = {p} in training mode")
        inputs = {"queries": queries, "keys": keys, "values": values}
        spy = DropoutSpy(p)  # records what it is called on
        with seeded(CONTEXT_SEED):
            outcome = run(causal_context, name, {**inputs, "dropout": spy})
        if outcome.failed:
            return with_context(outcome.failed, on)
        weights = attention_weights(queries, keys, is_causal=True)  # (T, T)
        with seeded(CONTEXT_SEED):
            expected = F.dropout(weights, p, training=True) @ values  # (T, d_v)
        problem = tensor_problem(outcome.answer, name, expected)
        if problem:
            return with_context(problem, on)
        if close(outcome.answer, expected):
            pass
        elif close(outcome.answer, weights @ values):
            return with_context(incorrect(
                "no dropout in training mode: the dropout module is training for this call, "
                "so some weights must be dropped", WEIGHTS_HINT), on)
        elif spy.seen and _placement(spy.seen, queries, keys, values):
            return with_context(_placement(spy.seen, queries, keys, values), on)
        elif not spy.seen:
            return with_context(incorrect(
                "the `dropout` module was never called: a dropout of your own (F.dropout, "
                "scaled_dot_product_attention's dropout_p) draws other weights to drop, and "
                "does not follow the module's train() and eval()", WEIGHTS_HINT), on)
        else:
            with seeded(CONTEXT_SEED):
                dropped = F.dropout(weights, p, training=True)
            mistakes = [
                (dropped * (1 - p) @ values, incorrect(
                    "the kept weights lost their 1/(1 - p) scaling: the dropout module "
                    "already scales them; do not undo it", "use what the module returns as "
                                                           "it is.")),
                (F.normalize(dropped, p=1, dim=-1) @ values, incorrect(
                    "the weights are renormalised after dropout, which undoes its 1/(1 - p) "
                    "scaling row by row: in training a row need not sum to 1; on average it "
                    "does", "use what the module returns as it is.")),
            ]
            return with_context(compare(outcome.answer, expected, mistakes, name, incorrect(
                "in training mode these are not the context vectors: causal weights, dropped "
                "by the module, then multiplied by the values", WEIGHTS_HINT)), on)
        spy = DropoutSpy(p).eval()
        with seeded(CONTEXT_SEED):
            outcome = run(causal_context, name, {**inputs, "dropout": spy})
        if outcome.failed:
            return with_context(outcome.failed, f"{on[:on.index(' in training')]} in eval mode")
        plain = weights @ values
        with seeded(CONTEXT_SEED):
            always = F.dropout(weights, p, training=True) @ values
        if spy.seen:
            still_dropped = incorrect(
                "in eval mode weights are still dropped: F.dropout(..., training=True) drops "
                "whatever the module's mode", "the module itself follows train() and eval().")
        else:
            still_dropped = incorrect(
                "in eval mode weights are still dropped, and the `dropout` module was never "
                "called: a dropout of your own (scaled_dot_product_attention's dropout_p, "
                "F.dropout) does not follow the module's train() and eval()",
                "call the module on the weights, and it follows the mode by itself.")
        result = compare(outcome.answer, plain, [(always, still_dropped)], name, incorrect(
            "in eval mode the context vectors must be those without dropout",
            "in eval mode the dropout module returns its input unchanged."))
        if not result.correct:
            return with_context(result, f"{on[:on.index(' in training')]} in eval mode")
    return correct("dropout on the weights, after the softmax and before the values, and only "
                   "in training mode.")
