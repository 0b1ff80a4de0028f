"""Checks for notebook 04's exercises: a forward that slices the mask to the sequence, and
a tensor kept as a buffer that is not saved.

The checks take the learner's class, not an instance: they build their own modules (with
their own seed, the global generator's state given back afterwards), so nothing the
learner built is touched.
"""

import re

import torch
from torch import nn

from helpers.attention import CausalAttention
from helpers.checks.feedback import (
    NOT_ATTEMPTED,
    DropoutSpy,
    Feedback,
    OperationLog,
    close,
    compare,
    construct,
    correct,
    exercise_check,
    explained,
    incorrect,
    not_attempted,
    run,
    shape_text,
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


CORNER_HINT = "the mask of a shorter sequence is a corner of the full one, in both dimensions."
SIZE_ERRORS = [("must match the size",
                "the mask does not fit the scores: it must be (T, T) for this sequence's T, "
                "while the buffer is (context_length, context_length), and a slice of a fixed "
                "size fits one length only", CORNER_HINT)]

# Where an error's text names the mask's shape: attention_weights's own check, and a
# boolean mask used as an index.
MASK_SHAPE_IN_ERRORS = [re.compile(r"attn_mask of shape \((\d+), (\d+)\)"),
                        re.compile(r"shape of the mask \[(\d+), (\d+)\]")]


def _mask_shape(error: BaseException, log: OperationLog):
    """The (rows, columns) of the 2-D mask that met the scores when ``error`` was raised,
    or None: from the error's text, else from the operation that failed."""
    for pattern in MASK_SHAPE_IN_ERRORS:
        found = pattern.search(str(error))
        if found:
            return int(found.group(1)), int(found.group(2))
    masks = [shape for shape, dtype in zip(log.shapes, log.dtypes, strict=True)
             if len(shape) == 2 and dtype == torch.bool]
    return masks[0] if len(masks) == 1 else None


def _mask_meaning(shape, B: int, T: int, context_length: int):
    """What a mask of ``shape`` met by (B, T, T) scores says about its slice, or None."""
    scores = f"the scores of T = {T} tokens, (B, T, T) = {shape_text((B, T, T))}"
    cut = f"(T = {T} tokens, context_length = {context_length})"
    if shape == (context_length, context_length):
        return (f"the whole mask buffer, (context_length, context_length) = "
                f"{shape_text(shape)}, was applied to {scores}: the mask was not cut to the "
                "sequence's length")
    if shape == (T, context_length):
        return (f"the mask was cut along the queries only: it is (T, context_length) = "
                f"{shape_text(shape)} {cut}, so its keys still run to context_length. "
                "A slice such as [:T] cuts only the first dimension")
    if shape == (context_length, T):
        return (f"the mask was cut along the keys only: it is (context_length, T) = "
                f"{shape_text(shape)} {cut}, so its queries still run to context_length")
    if shape[0] == shape[1] and shape[0] != T:
        return (f"the mask was cut to a fixed size, {shape_text(shape)}, and applied to "
                f"{scores}: a slice of a fixed size fits one length only")
    return None


def _product_meaning(shapes, B: int, T: int, d_out: int):
    """What a matrix product of tensors of ``shapes`` that failed says, or None."""
    vectors, weights = (B, T, d_out), (B, T, T)
    if len(shapes) != 2 or T == d_out:
        return None
    if tuple(shapes) == (vectors, weights):
        return (f"the values were multiplied by the weights in the wrong order: (B, T, d_out) "
                f"@ (B, T, T) = {shape_text(vectors)} @ {shape_text(weights)}, where d_out = "
                f"{d_out} would have to equal T = {T}", (
                    "a row of the weights is one query's share for each key; the values have "
                    "one row per key. Which of the two must come first, so that the sizes "
                    "that meet are the keys?"))
    if tuple(shapes) == (vectors, vectors):
        return (f"two (B, T, d_out) = {shape_text(vectors)} tensors were multiplied: for the "
                "scores, each query meets each key, so the keys must be transposed first, "
                "(B, T, d_out) -> (B, d_out, T)", "notebook 1 computes the scores the same "
                                                  "way, with a transpose.")
    return None


def _failure_in_eval(yours, name: str, x: torch.Tensor, context_length: int, failed):
    """``failed`` with the mistake behind the error named when the check recognises it: the
    forward is run again, watching which operation fails on which shapes."""
    with OperationLog() as log:
        again = run(yours, f"{name}.forward", {"x": x})
    error = again.error
    if error is None:
        return failed
    B, T = x.shape[:2]
    d_out = yours.W_value.out_features if isinstance(yours.W_value, nn.Linear) else None
    shape = _mask_shape(error, log)
    meaning = _mask_meaning(shape, B, T, context_length) if shape else None
    if meaning:
        return explained(error, f"{name}.forward", meaning, CORNER_HINT)
    if log.name in ("matmul", "bmm", "__matmul__") and d_out is not None:
        product = _product_meaning(log.shapes, B, T, d_out)
        if product:
            return explained(error, f"{name}.forward", *product)
    return failed


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
            if outcome.error is not None and not isinstance(outcome.error,
                                                            NotImplementedError):
                outcome.failed = _failure_in_eval(yours, name, x, context_length,
                                                  outcome.failed)
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


class _Squares(nn.Module):
    """Stands in for dropout and squares each entry: a forward that sends every attention
    weight through self.dropout exactly once then gives weights**2 @ values, however it
    cuts the weights into calls."""

    def forward(self, x):
        return x * x


def _pieces_text(seen, weights_shape) -> str:
    shapes = {tuple(piece.shape) for piece in seen}
    B, T = weights_shape[:2]
    if len(seen) == T and shapes == {(B, T)}:
        return f"once per query row, on pieces of shape (B, T) = {shape_text((B, T))}"
    if len(seen) == B and shapes == {(T, T)}:
        return f"once per sequence, on pieces of shape (T, T) = {shape_text((T, T))}"
    if len(shapes) == 1:
        return f"each time on a tensor of shape {shape_text(next(iter(shapes)))}"
    in_order = dict.fromkeys(tuple(piece.shape) for piece in seen)
    return "on tensors of shapes " + ", ".join(shape_text(shape) for shape in in_order)


def _dropout_in_pieces(yours, name, x, reference, undropped, seen, on):
    """(Feedback, remark) for a forward that called self.dropout more than once: right, with
    a remark, when every weight went through it exactly once, else the mistake."""
    calls = len(seen)
    yours.dropout = _Squares()
    probe = run(yours, f"{name}.forward", {"x": x})
    with torch.no_grad():
        squared = (undropped * undropped) @ reference.W_value(x)  # (B, T, d_out)
    if (probe.failed is None and isinstance(probe.answer, torch.Tensor)
            and close(probe.answer, squared)):
        pieces = _pieces_text(seen, undropped.shape)
        return None, (
            f"your forward calls self.dropout {calls} times, {pieces}. "
            "Dropout treats each weight on its own, so every weight is still dropped with "
            "probability p and the kept ones scaled by 1/(1 - p): the same dropout, and the "
            "check accepts it. But the random numbers are drawn in another order, so with "
            "the same seed your module drops other weights than CausalAttention does, and "
            f"the loop makes {calls} calls where one would do.")
    hint = "the class applies self.dropout to the attention weights, once."
    if all(piece.shape == undropped.shape for piece in seen):
        return with_context(incorrect(
            f"self.dropout was called {calls} times on the whole attention weights: each "
            f"weight is then dropped {calls} times over, kept with probability (1 - p)^{calls} "
            f"instead of 1 - p, and the kept ones are scaled {calls} times", hint), on), ""
    return with_context(incorrect(
        f"self.dropout was called {calls} times, {_pieces_text(seen, undropped.shape)}, and "
        "together the calls do not send each attention weight through dropout exactly "
        "once: dropout goes on the weights, after the softmax and before the values", hint),
        on), ""


def _forward_in_training(cls, name, d_in, d_out, context_length, generator):
    """(Feedback or None, remark) for the forward in training mode, with dropout."""
    modules, failed = _modules(cls, name, d_in, d_out, context_length, DROPOUT_P)
    if failed:
        return failed, ""
    reference, yours = modules
    spy = DropoutSpy(DROPOUT_P)
    yours.dropout = spy
    T = context_length - 1
    x = torch.randn(3, T, d_in, generator=generator)
    on = f"in training mode with dropout p = {DROPOUT_P}, x of shape (3, {T}, {d_in})"
    with seeded(7):
        outcome = run(yours.train(), f"{name}.forward", {"x": x})
    if outcome.failed:
        return with_context(outcome.failed, on), ""
    with seeded(7), torch.no_grad():
        expected, weights = reference.train()(x, return_weights=True)
    with torch.no_grad():
        plain, undropped = reference.eval()(x, return_weights=True)
    problem = tensor_problem(outcome.answer, f"{name}(x)", expected)
    if problem:
        return with_context(problem, on), ""
    if close(outcome.answer, expected):
        return None, ""
    hint = "the class applies self.dropout to the attention weights, once."
    if not spy.seen:
        if isinstance(outcome.answer, torch.Tensor) and close(outcome.answer, plain):
            return with_context(incorrect("no dropout in training mode: self.dropout is never "
                                          "called", hint), on), ""
        return with_context(incorrect("in training mode the output differs from "
                                      "CausalAttention's, and self.dropout was never called: "
                                      "the check compares the draws of the module's own "
                                      "dropout", hint), on), ""
    if len(spy.seen) > 1:
        return _dropout_in_pieces(yours, name, x, reference, undropped, spy.seen, on)
    if not (spy.seen[0].shape == undropped.shape and close(spy.seen[0], undropped)):
        return with_context(incorrect(
            f"self.dropout got a tensor of shape {tuple(spy.seen[0].shape)} that is not the "
            "attention weights: dropout goes on the weights, after the softmax and before "
            "the values", hint), on), ""
    return with_context(compare(outcome.answer, expected, [], f"{name}(x)", incorrect(
        "self.dropout got the weights, but the output in training mode differs from "
        "CausalAttention's", "multiply what self.dropout returns by the values.")), on), ""


HALF_HINT = ("to see it, build your module, call .half() on it and on an input, and run "
             "forward: masked_fill names the value it cannot convert.")


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
    pieces_remark = ""
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
        wrong, remark = _forward_in_training(MyCausalAttention, name, d_in, d_out,
                                             context_length, generator)
        if wrong:
            return wrong
        pieces_remark = pieces_remark or remark
    if pieces_remark:
        return correct("your module matches CausalAttention for every length up to "
                       "context_length in eval mode, through one mask buffer, and drops each "
                       "attention weight once in training mode.", remark=pieces_remark,
                       hint="dropout works entry by entry, whatever the shape: one call on "
                            "the whole (B, T, T) weights does what your loop does, in one "
                            "step, drawing in CausalAttention's order.")
    remark = _half_remark(MyCausalAttention, name, *CONFIGS[0][:3])
    return correct("your module matches CausalAttention for every length up to "
                   "context_length, in eval and in training mode, through one mask buffer.",
                   remark=remark, hint=HALF_HINT)


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
