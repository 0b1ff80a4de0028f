"""Checks for notebook 04's exercises: a forward that slices the mask to the sequence, and
a tensor kept as a buffer that is not saved.

The checks take the learner's class, not an instance: they build their own modules (with
their own seed, the global generator's state given back afterwards), so nothing the
learner built is touched.
"""

import torch
from torch import nn

from helpers.attention import CausalAttention
from helpers.checks.feedback import (
    NOT_ATTEMPTED,
    Feedback,
    attempt,
    call,
    compare,
    correct,
    hint_of,
    incorrect,
    not_attempted,
    seeded,
)

D_IN, D_OUT, CONTEXT_LENGTH = 3, 2, 6
LENGTHS = (6, 4, 1)  # the full length first: what already worked before slicing


def _modules(cls, name: str):
    """(reference, yours) with the same weights, or (None, Feedback)."""
    with seeded(123):
        reference = CausalAttention(D_IN, D_OUT, CONTEXT_LENGTH)
        yours, failed = attempt(cls, name, D_IN, D_OUT, CONTEXT_LENGTH)
    if failed:
        return None, failed
    try:
        yours.load_state_dict(reference.state_dict())
    except Exception as error:
        return None, incorrect(f"{name}'s weights do not load from CausalAttention's "
                               f"({type(error).__name__}: {error}); change only forward.")
    return (reference.eval(), yours.eval()), None


def _forward_mistakes(reference: CausalAttention, x: torch.Tensor):
    """What the usual slips in forward give for x (B, T, d_in)."""
    with torch.no_grad():
        queries, keys, values = reference.W_query(x), reference.W_key(x), reference.W_value(x)
        scores = queries @ keys.transpose(-2, -1)  # (B, T, T)
        T = x.shape[1]
        allowed = reference.causal_mask[:T, :T]
        d_k = keys.shape[-1]

        def mixed(masked_scores, scale, dim=-1):
            return torch.softmax(masked_scores / scale, dim=dim) @ values

        blocked = scores.masked_fill(~allowed, float("-inf"))
        return [
            (mixed(scores.masked_fill(allowed, float("-inf")), d_k**0.5),
             "the mask is inverted: the buffer is True where a query MAY attend, so "
             "masked_fill needs its complement, ~self.causal_mask[:T, :T]."),
            (mixed(blocked, 1.0), "the scores are not scaled: divide them by sqrt(d_k)."),
            (mixed(blocked, D_IN**0.5), "the scores are scaled by sqrt(d_in); the scale uses "
                                        "d_k, the size of a key (keys.shape[-1])."),
            (mixed(blocked, d_k**0.5, dim=1), "the softmax runs along dim=1, the queries: each "
                                              "row of weights must sum to 1, dim=-1."),
            (mixed(scores, d_k**0.5), "nothing is masked: every token sees the tokens after "
                                      "it. Mask with self.causal_mask[:T, :T]."),
            ((torch.softmax(scores / d_k**0.5, dim=-1) * allowed) @ values,
             "the future weights are zeroed after the softmax without renormalising, so the "
             "rows no longer sum to 1: mask the scores with -inf before the softmax."),
        ]


def _slicing_hint(T: int, failed: Feedback) -> str:
    return (f"it works for T = {CONTEXT_LENGTH} but fails for T = {T} ({hint_of(failed)}). "
            f"The mask is built for context_length = {CONTEXT_LENGTH} tokens: slice it to the "
            "sequence's T = x.shape[1] in both dimensions, self.causal_mask[:T, :T].")


def check_causal_attention_forward(MyCausalAttention) -> Feedback:
    """Exercise: a CausalAttention subclass whose forward slices the mask for every T."""
    name = "MyCausalAttention"
    modules, failed = _modules(MyCausalAttention, name)
    if failed:
        return failed
    reference, yours = modules
    x = torch.randn(2, CONTEXT_LENGTH, D_IN, generator=torch.Generator().manual_seed(40))
    for T in LENGTHS:
        batch = x[:, :T]  # (B, T, d_in)
        answer, failed = call(yours, f"{name}.forward", batch)
        if failed and T < CONTEXT_LENGTH and failed.status != NOT_ATTEMPTED:
            return incorrect(_slicing_hint(T, failed))
        if failed:
            return failed
        with torch.no_grad():
            expected = reference(batch)
        result = compare(answer, expected, _forward_mistakes(reference, batch), f"{name}(x)",
                         f"wrong context vectors for T = {T}: project, scale the scores by "
                         "sqrt(d_k), mask them with -inf where self.causal_mask[:T, :T] is "
                         "False, softmax each row, multiply by the values.", "")
        if not result.correct:
            return result
    return correct("your module matches CausalAttention for T = 6, 4 and 1, every length "
                   "through one mask built for context_length = 6.")


# ---------------------------------------------------------------- exercise 2

FACTORS = (1.0, 0.5, 0.25)


def check_buffer(Scaler) -> Feedback:
    """Exercise: Scaler keeps `factors` as a buffer that moves with it and is not saved."""
    name = "Scaler"
    scaler, failed = attempt(Scaler, name)
    if failed:
        return failed if failed.status != NOT_ATTEMPTED else not_attempted(f"{name}.__init__")
    factors = getattr(scaler, "factors", None)
    if not isinstance(factors, torch.Tensor):
        return incorrect(f"{name}() has no tensor `factors`: register it under that name, "
                         "self.register_buffer('factors', ...).")
    if isinstance(factors, nn.Parameter):
        return incorrect("factors is an nn.Parameter: the optimiser would train it, and it is "
                         "saved in the state_dict. A fixed tensor the module owns is a buffer: "
                         "self.register_buffer('factors', ..., persistent=False).")
    if "factors" not in dict(scaler.named_buffers()):
        return incorrect("factors is a plain attribute: .to(...) moves parameters and buffers, "
                         "not plain attributes, so it would stay on the CPU. Register it with "
                         "self.register_buffer('factors', ..., persistent=False).")
    if "factors" in scaler.state_dict():
        return incorrect("factors is a buffer, and it moves with the module, but it is saved in "
                         "the state_dict (and so in every checkpoint): pass persistent=False.")
    if scaler.to("meta").factors.device.type != "meta":
        return incorrect("factors does not move with the module: register it as a buffer.")
    output, failed = attempt(Scaler(), f"{name}()", torch.ones(len(FACTORS)))
    if failed:
        return failed
    if not isinstance(output, torch.Tensor) or not torch.equal(output, torch.tensor(FACTORS)):
        return incorrect(f"{name}()(torch.ones(3)) should give the factors {list(FACTORS)}: "
                         "keep their values and forward as they were.")
    return correct("factors moves with the module and stays out of the state_dict.")
