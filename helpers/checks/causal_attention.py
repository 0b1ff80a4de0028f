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
    DropoutSpy,
    Feedback,
    close,
    compare,
    construct,
    correct,
    exercise_check,
    incorrect,
    not_attempted,
    run,
    tensor_problem,
    with_context,
)
from helpers.seeding import seeded

# (d_in, d_out, context_length, lengths tried in order): unlike the notebook's (3, 2, 6).
CONFIGS = [(5, 4, 7, (7, 3, 1, 7)), (3, 6, 5, (5, 2, 4))]
DROPOUT_P = 0.4


def _modules(cls, name: str, d_in: int, d_out: int, context_length: int, dropout: float = 0.0):
    """(reference, yours) with the same weights, or (None, Feedback)."""
    with seeded(123):
        reference = CausalAttention(d_in, d_out, context_length, dropout)
        yours, failed = construct(cls, name, d_in, d_out, context_length, dropout)
    if failed:
        return None, failed
    try:
        yours.load_state_dict(reference.state_dict())
    except Exception as error:
        return None, incorrect(f"{name}'s weights do not load from CausalAttention's "
                               f"({type(error).__name__}: {str(error).splitlines()[0]})",
                               "change only forward: the layers and the buffer come from "
                               "CausalAttention's __init__.")
    return (reference, yours), None


def _forward_mistakes(reference: CausalAttention, x: torch.Tensor):
    """What the usual slips in forward give for x (B, T, d_in)."""
    queries, keys, values = reference.W_query(x), reference.W_key(x), reference.W_value(x)
    scores = queries @ keys.transpose(-2, -1)  # (B, T, T)
    T, d_in, d_k = x.shape[1], x.shape[-1], keys.shape[-1]
    allowed = reference.causal_mask[:T, :T]

    def mixed(masked_scores, scale, dim=-1):
        return torch.softmax(masked_scores / scale, dim=dim) @ values

    blocked = scores.masked_fill(~allowed, float("-inf"))
    mask_hint = "the buffer is True where a query MAY attend; masked_fill writes where its " \
                "mask is True."
    mistakes = [
        (mixed(scores.masked_fill(allowed, float("-inf")), d_k**0.5), incorrect(
            "the mask is inverted: -inf went where a query MAY attend", mask_hint)),
        (mixed(blocked, 1.0), incorrect("the scores are not scaled",
                                        "notebook 1 divides the scores before the softmax.")),
        (mixed(blocked, d_k), incorrect("the scores are divided by d_k; the scale is its "
                                        "square root", "notebook 1's scale.")),
        (mixed(blocked, d_k, dim=-2), incorrect(
            "the softmax runs along the queries: each row of weights must sum to 1",
            "a row is one query's weights over the keys, the last dimension.")),
        (mixed(blocked, d_k**0.5, dim=-2), incorrect(
            "the softmax runs along the queries: each row of weights must sum to 1",
            "a row is one query's weights over the keys, the last dimension.")),
        (mixed(scores, d_k**0.5), incorrect(
            "nothing is masked: every token sees the tokens after it",
            "the buffer self.causal_mask holds the mask; where is it used?")),
        ((torch.softmax(scores / d_k**0.5, dim=-1) * allowed) @ values, incorrect(
            "the future weights are zeroed after the softmax without renormalising, so the "
            "rows no longer sum to 1", "notebook 2's strategy 2 masks the scores, not the "
                                       "weights.")),
    ]
    if d_in != d_k:
        mistakes.append((mixed(blocked, d_in**0.5), incorrect(
            "the scores are scaled by sqrt(d_in); the scale uses d_k, the size of a key",
            "take the size from the keys.")))
    for constant in {2, 3} - {d_k}:  # the notebook's d_out and d_in
        mistakes.append((mixed(blocked, constant**0.5), incorrect(
            f"the scores are scaled by sqrt({constant}), a size of the notebook's example, "
            f"not of this module (d_k = {d_k})", "take the size from the keys.")))
    return mistakes


SIZE_ERRORS = [("must match the size",
                "the mask does not fit the scores: it must be (T, T) for this sequence's T, "
                "while the buffer is (context_length, context_length), and a slice of a fixed "
                "size fits one length only",
                "the mask of a shorter sequence is a corner of the full one, in both "
                "dimensions.")]


def _forward_in_eval(reference, yours, name, d_in, context_length, lengths, generator):
    buffer = reference.causal_mask.clone()
    for T in lengths:
        x = torch.randn(2, T, d_in, generator=generator)  # (B, T, d_in)
        on = f"for x of shape (2, {T}, {d_in}), context_length = {context_length}, eval mode"
        outcome = run(yours, f"{name}.forward", {"x": x}, extra_errors=SIZE_ERRORS)
        mask_now = getattr(yours, "causal_mask", None)
        if not (isinstance(mask_now, torch.Tensor) and mask_now.shape == buffer.shape
                and torch.equal(mask_now, buffer)):
            return incorrect(
                "forward replaced the mask buffer with its slice: after one call with a short "
                "sequence the module no longer holds the mask for context_length tokens, so "
                "a later, longer sequence fails", "slice into a local variable; the buffer "
                                                  "stays as __init__ built it.")
        if outcome.failed:
            return with_context(outcome.failed, on)
        with torch.no_grad():
            expected = reference(x)
            mistakes = _forward_mistakes(reference, x)
        result = compare(outcome.answer, expected, mistakes, f"{name}(x)", incorrect(
            f"wrong context vectors for T = {T} in eval mode (where dropout changes nothing)",
            "project, score, scale by sqrt(d_k), mask the future with -inf, softmax each "
            "row, dropout, multiply by the values."))
        if not result.correct:
            return with_context(result, on)
    return None


def _forward_in_training(cls, name, d_in, d_out, context_length, generator):
    modules, failed = _modules(cls, name, d_in, d_out, context_length, DROPOUT_P)
    if failed:
        return failed
    reference, yours = modules
    spy = DropoutSpy(DROPOUT_P)
    yours.dropout = spy
    T = context_length - 1
    x = torch.randn(3, T, d_in, generator=generator)
    on = f"in training mode with dropout p = {DROPOUT_P}, x of shape (3, {T}, {d_in})"
    with seeded(7):
        outcome = run(yours.train(), f"{name}.forward", {"x": x})
    if outcome.failed:
        return with_context(outcome.failed, on)
    with seeded(7), torch.no_grad():
        expected, weights = reference.train()(x, return_weights=True)
    with torch.no_grad():
        plain, undropped = reference.eval()(x, return_weights=True)
    problem = tensor_problem(outcome.answer, f"{name}(x)", expected)
    if problem:
        return with_context(problem, on)
    if close(outcome.answer, expected):
        return None
    hint = "the class applies self.dropout to the attention weights, once."
    if not spy.seen:
        if isinstance(outcome.answer, torch.Tensor) and close(outcome.answer, plain):
            return with_context(incorrect("no dropout in training mode: self.dropout is never "
                                          "called", hint), on)
        return with_context(incorrect("in training mode the output differs from "
                                      "CausalAttention's, and self.dropout was never called: "
                                      "the check compares the draws of the module's own "
                                      "dropout", hint), on)
    if len(spy.seen) > 1:
        return with_context(incorrect(f"self.dropout was called {len(spy.seen)} times", hint),
                            on)
    if not (spy.seen[0].shape == undropped.shape and close(spy.seen[0], undropped)):
        return with_context(incorrect(
            f"self.dropout got a tensor of shape {tuple(spy.seen[0].shape)} that is not the "
            "attention weights: dropout goes on the weights, after the softmax and before "
            "the values", hint), on)
    return with_context(compare(outcome.answer, expected, [], f"{name}(x)", incorrect(
        "self.dropout got the weights, but the output in training mode differs from "
        "CausalAttention's", "multiply what self.dropout returns by the values.")), on)


def _half_remark(cls, name, d_in, d_out, context_length) -> str:
    """A remark when the forward works in float32 but a hard-coded fill breaks float16."""
    modules, failed = _modules(cls, name, d_in, d_out, context_length)
    if failed:
        return ""
    _, yours = modules
    x = torch.randn(2, 3, d_in, generator=torch.Generator().manual_seed(8)).half()
    outcome = run(yours.half().eval(), f"{name}.forward", {"x": x})
    if outcome.error is not None and "Half without overflow" in str(outcome.error):
        return ("your forward is right in float32, but fails in float16: a hard-coded fill "
                "such as -1e9 does not fit float16, as notebook 2 showed; -inf exists in every "
                "floating dtype.")
    return ""


@exercise_check("a module keeps one mask, built for context_length tokens; a sequence of T "
                "tokens uses the top-left T x T corner of it, and the buffer itself never "
                "changes. The check also runs it in training mode with dropout.")
def check_causal_attention_forward(MyCausalAttention) -> Feedback:
    """Exercise: a CausalAttention subclass whose forward slices the mask for every T."""
    name = "MyCausalAttention"
    generator = torch.Generator().manual_seed(40)
    for d_in, d_out, context_length, lengths in CONFIGS:
        # Built with dropout: in eval mode it must change nothing.
        modules, failed = _modules(MyCausalAttention, name, d_in, d_out, context_length,
                                   DROPOUT_P)
        if failed:
            return failed
        reference, yours = modules
        wrong = _forward_in_eval(reference.eval(), yours.eval(), name, d_in, context_length,
                                 lengths, generator)
        if wrong:
            if wrong.status == NOT_ATTEMPTED:
                return not_attempted(f"{name}.forward")
            return wrong
        wrong = _forward_in_training(MyCausalAttention, name, d_in, d_out, context_length,
                                     generator)
        if wrong:
            return wrong
    remark = _half_remark(MyCausalAttention, name, *CONFIGS[0][:3])
    return correct("your module matches CausalAttention for every length up to "
                   "context_length, in eval and in training mode, through one mask buffer.",
                   remark=remark)


# ---------------------------------------------------------------- exercise 2

FACTORS = (1.0, 0.5, 0.25)


@exercise_check("nn.Module has a method that registers a tensor as part of the module "
                "without making it a parameter; one of its arguments decides whether it is "
                "saved.")
def check_buffer(Scaler) -> Feedback:
    """Exercise: Scaler keeps `factors` as a buffer that moves with it and is not saved."""
    name = "Scaler"
    scaler, failed = construct(Scaler, name)
    if failed:
        return failed if failed.status != NOT_ATTEMPTED else not_attempted(f"{name}.__init__")
    factors = getattr(scaler, "factors", None)
    buffer_hint = "notebook 4 keeps its causal mask in the same kind of place."
    if not isinstance(factors, torch.Tensor):
        return incorrect(f"{name}() has no tensor `factors` (it has {_kind(factors)})",
                         "register the tensor under the name `factors`.")
    if isinstance(factors, nn.Parameter):
        return incorrect("factors is an nn.Parameter: it is listed in parameters() (an optimiser "
                         "trains it unless it is frozen) and saved in the state_dict. A fixed "
                         "tensor the module owns is a buffer",
                         buffer_hint)
    if "factors" not in dict(scaler.named_buffers()):
        return incorrect("factors is a plain attribute: .to(...) moves parameters and buffers, "
                         "not plain attributes, so it would stay behind on the CPU",
                         buffer_hint)
    if "factors" in scaler.state_dict():
        return incorrect("factors is a buffer, and it moves with the module, but it is saved "
                         "in the state_dict (and so in every checkpoint)",
                         "registering a buffer takes an argument that keeps it out of the "
                         "state_dict.")
    moved, failed = _moved(scaler)
    if failed:
        return failed
    if moved != "meta":
        return incorrect("factors does not move with the module", buffer_hint)
    fresh, failed = construct(Scaler, name)
    if failed:
        return failed
    outcome = run(fresh, f"{name}()", {"x": torch.ones(len(FACTORS))})
    if outcome.failed:
        return outcome.failed
    problem = tensor_problem(outcome.answer, f"{name}()", torch.ones(len(FACTORS)))
    if problem:
        return problem
    if not torch.equal(outcome.answer.detach().float(), torch.tensor(FACTORS)):
        return incorrect(f"{name}()(torch.ones(3)) should give the factors {list(FACTORS)}",
                         "keep the values and forward as they were handed out.")
    return correct("factors moves with the module and stays out of the state_dict.")


def _kind(value) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _moved(scaler):
    """The device of factors after scaler.to('meta'), or (None, Feedback)."""
    try:
        return scaler.to("meta").factors.device.type, None
    except Exception as error:
        return None, incorrect(f"{type(scaler).__name__}().to('meta') raised "
                               f"{type(error).__name__}: {error}",
                               "a module moves with .to(...) when everything it holds does.")
