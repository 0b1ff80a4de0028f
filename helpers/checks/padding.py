"""Checks for notebook 06's exercises: a masked softmax that never makes a NaN, and the
padding steps of a causal multi-head attention."""

import warnings

import torch

from helpers.attention import MultiHeadAttention, causal_mask, padding_mask
from helpers.checks.feedback import (
    NOT_ATTEMPTED,
    Feedback,
    OperationLog,
    close,
    compare,
    construct,
    correct,
    exercise_check,
    explained,
    hint_of,
    incorrect,
    not_attempted,
    run,
    shape_text,
    tensor_problem,
    with_context,
)
from helpers.seeding import seeded

# ---------------------------------------------------------------- exercise 1


def _softmax_cases():
    """(scores, allowed, what): left padding leaves rows with no allowed key; 3-D and 4-D."""
    generator = torch.Generator().manual_seed(6)
    left = padding_mask([4, 2], 4, side="left")  # (B, T)
    allowed3 = causal_mask(4) & left[:, None, :]  # (B, T, T)
    right = padding_mask([5, 2], 5, side="right")
    allowed4 = (causal_mask(5) & right[:, None, :] & right[:, :, None])[:, None]  # (B, 1, T, T)
    scores4 = torch.randn(2, 3, 5, 5, generator=generator) * 2
    return [
        (torch.randn(2, 4, 4, generator=generator) * 2, allowed3,
         "scores (2, 4, 4), left padding"),
        (scores4, allowed4.expand(2, 3, 5, 5).clone(),  # (B, H, T, T): the same shape
         "scores (2, 3, 5, 5), right padding with the padded rows hidden"),
        (scores4, allowed4,  # (B, 1, T, T): broadcast over the heads, as exercise 2 passes it
         "scores (2, 3, 5, 5) and allowed (2, 1, 5, 5), broadcast over the heads"),
    ]


ZERO_ROWS = ("find the rows with no allowed key, give them finite scores before the softmax, "
             "and set their weights to 0 afterwards.")


def _softmax_feedback(answer, scores, allowed, name):
    allowed = allowed.expand(scores.shape)  # a mask that broadcasts, judged at full shape
    no_key = ~allowed.any(dim=-1)  # (..., T)
    blocked = scores.masked_fill(~allowed, float("-inf"))
    expected = torch.softmax(blocked, dim=-1).masked_fill(no_key[..., None], 0.0)
    problem = tensor_problem(answer, name, expected)
    if problem:
        return problem
    values = answer.detach()
    nan_rows = torch.isnan(values).any(dim=-1)
    if (nan_rows & ~no_key).any():
        return incorrect("NaN in rows that do have an allowed key: is the mask inverted?",
                         "`allowed` is True where a query MAY attend; masked_fill writes "
                         "where its mask is True.")
    if nan_rows.any():
        return incorrect("NaN in the rows with no allowed key: the softmax of a row of nothing "
                         "but -inf is NaN (every exp(-inf) is 0, and 0 / 0 is NaN; a softmax "
                         "that first subtracts the row's largest score meets (-inf) - (-inf), "
                         "NaN too)", ZERO_ROWS)
    uniform = torch.full_like(scores, 1 / scores.shape[-1])
    if no_key.any() and close(values[no_key], uniform[no_key]):
        return incorrect("the rows with no allowed key are spread evenly over every key "
                         "(what finite scores in an empty row give after the softmax): those "
                         "queries then read keys they may not see. Set those rows to 0 after "
                         "the softmax", ZERO_ROWS)
    mistakes = [
        (torch.softmax(scores.masked_fill(allowed, float("-inf")), dim=-1).nan_to_num(0.0),
         incorrect("the mask is inverted", "`allowed` is True where a query MAY attend.")),
        (torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0), incorrect(
            "the blocked weights are set to 0 after the softmax, so the allowed ones no longer "
            "sum to 1", "mask the scores, not the weights.")),
    ]
    for dim in range(scores.ndim - 1):  # an `any` along a dimension counted from the front
        wrong_rows = ~allowed.any(dim=dim, keepdim=True)
        if wrong_rows.shape[-1] == 1:
            continue
        safe = blocked.masked_fill(wrong_rows, 0.0)
        mistakes.append((torch.softmax(safe, dim=-1).masked_fill(wrong_rows, 0.0), incorrect(
            f"the rows with no allowed key were looked for along dimension {dim} of "
            f"{scores.ndim}: a row's keys are the last dimension, whatever comes before",
            "count dimensions from the end.")))
    return compare(values, expected, mistakes, name, incorrect(
        "the weights are wrong: blocked keys get 0, each row with an allowed key is a softmax "
        "of its allowed scores, and rows with no allowed key are 0", ZERO_ROWS))


def _gradient_feedback(answer, leaf):
    """Feedback when a NaN forms on the way to the weights (it shows in the gradient)."""
    # The loss reads every output, so every row sends a gradient back. A NaN formed and
    # replaced in the forward pass shows there: the softmax's backward returns NaN for its
    # row (anomaly mode names it), whether or not it reaches the scores.
    loss = (answer * torch.arange(answer.numel()).reshape(answer.shape)).sum()
    try:
        loss.backward(retain_graph=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # anomaly mode announces itself with a warning
            with torch.autograd.detect_anomaly(check_nan=True):
                torch.autograd.grad(loss, leaf)
    except RuntimeError as error:
        if "nan values" not in str(error):
            return incorrect(f"the backward pass failed: {str(error).splitlines()[0]}",
                             "the weights must be differentiable with respect to the scores.")
        reaches = leaf.grad is None or torch.isnan(leaf.grad).any()
        formed = ("a NaN forms inside your function: the softmax of a row with no allowed key "
                  "is NaN, replaced afterwards, so the weights look right, but the backward "
                  "pass goes through that NaN")
        if reaches:
            return incorrect(f"{formed}, and the gradient of the scores is NaN: one training "
                             "step would write NaN into the model's weights",
                             "keep NaN from ever forming: " + ZERO_ROWS)
        return incorrect(
            f"{formed}: the softmax's gradient for that row is NaN. The exercise asks for no "
            "NaN at any step, backward included", "keep NaN from ever forming: " + ZERO_ROWS
            + " (Here the NaN goes no further only because masked_fill sends no gradient to "
            "the scores it replaced; a mask added to the scores would carry it into the "
            "model's weights.)")
    return None


KEEPDIM_HINT = (
    "the line that finds the rows with no allowed key, the `any` over the keys (dim=-1), "
    "needs keepdim=True. Shapes broadcast from the right: with keepdim the result is "
    "(..., T_q, 1), and its size-1 last axis stretches across each row's T_k keys; without "
    "it the result is (..., T_q): lined up from the right, its T_q falls on the keys axis "
    "and every axis before it one place off, so the sizes clash (or, where they happen to "
    "match, the wrong rows are filled).")


def _broadcast_error(error: BaseException, name, scores, allowed):
    """Feedback when the answer raised on a mask that only broadcasts to the scores, as a
    boolean index does; None for other errors or a mask of the scores' own shape."""
    if tuple(allowed.shape) == tuple(scores.shape) or not isinstance(error, IndexError):
        return None
    return explained(error, name, (
        "it works on a mask of the scores' own shape, not on one that broadcasts, as "
        "exercise 2's does. Boolean indexing, scores[~allowed] = ..., needs the mask's full "
        "shape"), "use masked_fill or torch.where, which broadcast the mask.")


def _softmax_error(safe_masked_softmax, name, scores, allowed):
    """Feedback when the answer raised because one value per row, an ``any`` over the keys
    without keepdim, met the scores; None for other errors. The answer is run again,
    watching which operation fails on which shapes."""
    with OperationLog() as log:
        again = run(safe_masked_softmax, name, {"scores": scores.clone(),
                                                "allowed": allowed.clone()},
                    check_inputs=False)
    rows = tuple(scores.shape[:-1])  # (..., T_q): one value per row
    if again.error is None or rows not in log.shapes or tuple(scores.shape) not in log.shapes:
        return None
    return explained(again.error, name, (
        f"a {shape_text(rows)} tensor, one value per row, met the {shape_text(scores.shape)} "
        "scores: the rows with no allowed key lost their last axis (any without "
        f"keepdim=True); as {shape_text((*rows, 1))} they would broadcast"), KEEPDIM_HINT)


@exercise_check(ZERO_ROWS + " The `any` that finds them needs keepdim=True, so that its "
                            "(..., T_q, 1) result broadcasts across each row's keys. Check the "
                            "gradient too: a NaN replaced after it formed still poisons the "
                            "backward pass.")
def check_safe_masked_softmax(safe_masked_softmax) -> Feedback:
    """Exercise: masked softmax whose rows with no allowed key are 0, NaN-free both ways."""
    name = "safe_masked_softmax"
    for scores, allowed, on in _softmax_cases():
        leaf = scores.clone().requires_grad_(True)
        outcome = run(safe_masked_softmax, name, {"scores": leaf, "allowed": allowed.clone()},
                      check_inputs=False)
        if outcome.failed:
            if outcome.error is not None and not isinstance(outcome.error,
                                                            NotImplementedError):
                outcome.failed = (_broadcast_error(outcome.error, name, scores, allowed)
                                  or _softmax_error(safe_masked_softmax, name, scores, allowed)
                                  or outcome.failed)
            return with_context(outcome.failed, f"on {on}")
        if not torch.equal(leaf.detach(), scores):
            return with_context(incorrect(f"{name} changed its argument `scores` in place",
                                          "build the result as a new tensor."), f"on {on}")
        wrong = _softmax_feedback(outcome.answer, scores, allowed, name)
        if not wrong.correct:
            return with_context(wrong, f"on {on}")
        if outcome.answer.requires_grad:
            wrong = _gradient_feedback(outcome.answer, leaf)
            if wrong:
                return with_context(wrong, f"on {on}")
        else:
            return with_context(incorrect(
                "the weights carry no gradient back to the scores (detached, or rebuilt "
                "from plain numbers)", "compute the weights from `scores` with torch "
                                       "operations."), f"on {on}")
    return correct("rows with no allowed key are 0, and neither the weights nor their "
                   "gradient hold a NaN, for 3- and 4-dimensional scores and a mask that "
                   "broadcasts over the heads.")


# ---------------------------------------------------------------- exercise 2

# (d_in, d_out, context_length, num_heads, qkv_bias): unlike the notebook's modules.
MHA_CONFIGS = [(5, 6, 8, 3, False), (4, 8, 6, 4, True)]


def _attention(module, x, is_token, *, causal=True, keys=True, rows=False, scale="head",
               split=True, merge=True, out_proj=True, on_heads=False):
    """What MultiHeadAttention gives with one step changed: the usual slips. ``on_heads``:
    a (B, T, T) mask, which (B, H, T, T) scores read as (1, H, T, T) when B = H."""
    B, T, _ = x.shape
    H, head_dim = module.num_heads, module.head_dim

    def heads(features):  # (B, T, d_out) -> (B, H, T, head_dim)
        if split:
            return features.view(B, T, H, head_dim).transpose(1, 2)
        return features.view(B, H, T, head_dim)

    queries, keys_, values = heads(module.W_query(x)), heads(module.W_key(x)), heads(
        module.W_value(x))
    size = {"head": head_dim, "d_out": module.d_out, "none": 1}[scale]
    scores = queries @ keys_.transpose(-2, -1) / size**0.5  # (B, H, T, T)
    allowed = causal_mask(T) if causal else torch.ones(T, T, dtype=torch.bool)
    allowed = allowed.expand(B, 1, T, T)
    if is_token is not None and keys:
        allowed = allowed & is_token[:, None, None, :]
    if is_token is not None and on_heads:
        allowed = allowed[:, 0].unsqueeze(0)  # (1, B, T, T): sequence h's mask on head h
    if is_token is not None and rows:
        allowed = allowed & is_token[:, None, :, None]
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).nan_to_num(0.0)
    context = weights @ values  # (B, H, T, head_dim)
    if merge:
        context = context.transpose(1, 2)  # (B, T, H, head_dim)
    context = context.reshape(B, T, H * head_dim)
    return module.out_proj(context) if out_proj else context


HEADS_AXIS_HINT = ('this notebook\'s section "The shapes, with heads": the mask needs a '
                   "dimension of size 1 for the heads, between B and the queries.")


# `allowed &= ...` on the (T, T) slice of the causal_mask buffer: torch's in-place error.
IN_PLACE_MASK = (
    "doesn't match the broadcast shape",
    "an in-place operation such as `allowed &= ...` writes its result into `allowed`, the "
    "(T, T) slice of the causal_mask buffer: it cannot grow to (B, 1, T, T), and a result "
    "that fitted would be written into the module's causal mask itself",
    "build a new tensor instead: allowed = allowed & (the padding mask with its new axes).")


def _mha_mistakes(reference, x, is_token):
    step_hint = "compare each step of your forward with MultiHeadAttention's in notebook 5."
    B, H = x.shape[0], reference.num_heads
    # The check's first module has as many heads as its first batch has sequences: the
    # notebook's trap, which no error reveals.
    on_heads = [] if is_token is None or B != H else [(dict(on_heads=True), incorrect(
        "the padding mask has no dimension for the heads: against (B, H, T, T) scores, "
        f"shapes line up from the right, so its B falls on the heads axis. Here B = H = {H}: "
        "no error, and head h of every sequence got the padding of sequence h",
        HEADS_AXIS_HINT))]
    slips = [*on_heads,
        (dict(keys=False), incorrect(
            "real tokens attend to padded keys: the padding mask is not used, or it hides "
            "padded queries (rows) instead of keys", "the padding mask hides padded KEYS, "
                                                      "the last dimension of the scores.")),
        (dict(causal=False), incorrect("not causal: each token sees the tokens after it",
                                       "the causal mask and the padding mask both apply.")),
        (dict(scale="d_out"), incorrect("the scores are scaled by sqrt(d_out); each head's "
                                        "scale is sqrt(head_dim), the size of ITS keys",
                                        step_hint)),
        (dict(scale="none"), incorrect("the scores are not scaled", step_hint)),
        (dict(split=False), incorrect(
            "the heads are split by viewing straight to (B, H, T, head_dim), which mixes "
            "tokens into heads", "notebook 5's split_heads exercise.")),
        (dict(merge=False), incorrect(
            "the heads are merged without moving the tokens back before the heads: one "
            "token's output mixes several tokens", "notebook 5's merge_heads exercise.")),
        (dict(out_proj=False), incorrect("out_proj is not applied to the merged heads",
                                         step_hint)),
    ]
    with torch.no_grad():
        return [(_attention(reference, x, is_token, **changes), feedback)
                for changes, feedback in slips]


def _mha_inputs(d_in: int, context_length: int):
    """(x, is_token or None, what): padding on both sides, shorter sequences, no mask."""
    generator = torch.Generator().manual_seed(66)
    T = context_length - 2
    cases = []
    for lengths, side in (([T, 2, T - 1], "right"), ([3, T, 1], "left")):
        cases.append((torch.randn(3, T, d_in, generator=generator),
                      padding_mask(lengths, T, side=side), f"{side} padding, lengths={lengths}"))
    cases.append((torch.randn(2, context_length, d_in, generator=generator), None,
                  "no padding mask, T = context_length"))
    return cases


def _build(cls, name, config, dropout=0.0):
    d_in, d_out, context_length, num_heads, qkv_bias = config
    with seeded(321):
        reference = MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads,
                                       qkv_bias=qkv_bias)
        yours, failed = construct(cls, name, d_in, d_out, context_length, dropout, num_heads,
                                  qkv_bias)
    if failed:
        return None, failed
    state = getattr(yours, "state_dict", None)
    if not callable(state):
        return None, incorrect(f"{name} is not an nn.Module", "subclass nn.Module.")
    mine, theirs = yours.state_dict(), reference.state_dict()
    if set(mine) != set(theirs):
        missing, extra = sorted(set(theirs) - set(mine)), sorted(set(mine) - set(theirs))
        words = []
        if missing:
            words.append(f"it lacks {', '.join(missing)}")
        if extra:
            words.append(f"it also saves {', '.join(extra)}")
        return None, incorrect(
            f"{name}'s state_dict does not have MultiHeadAttention's entries: "
            f"{'; '.join(words)}", "name the layers W_query, W_key, W_value and out_proj, "
                                   "with qkv_bias deciding the three projections' biases; a "
                                   "mask built from context_length is not saved.")
    for key, value in theirs.items():
        if tuple(mine[key].shape) != tuple(value.shape):
            return None, incorrect(f"{key} has shape {shape_text(mine[key].shape)}, expected "
                                   f"{shape_text(value.shape)}", "nn.Linear(in, out) keeps "
                                                                 "its weight as (out, in).")
    yours.load_state_dict(theirs)
    return (reference.eval(), yours.eval()), None


def _mha_case(yours, reference, x, is_token, name, on):
    arguments = {"x": x} if is_token is None else {"x": x, "padding_mask": is_token}
    outcome = run(yours, f"{name}.forward", arguments, extra_errors=[IN_PLACE_MASK])
    if outcome.failed:
        return outcome.failed
    with torch.no_grad():
        expected = reference(x, is_token)  # (B, T, d_out)
    problem = tensor_problem(outcome.answer, f"{name}(x)", expected)
    if problem:
        return problem
    answer = outcome.answer.detach()
    real = torch.ones(x.shape[:2], dtype=torch.bool) if is_token is None else is_token
    if torch.isnan(answer[real]).any():
        return incorrect("NaN at real tokens' positions", "which rows of the weights have no "
                                                          "allowed key?")
    if torch.isnan(answer).any():
        return incorrect("NaN at the padded positions: a padded query with no allowed key "
                         "gets a softmax of nothing but -inf. Its output is ignored, but NaN "
                         "spreads to every gradient it touches", "exercise 1 of this "
                                                                 "notebook.")
    if not close(answer[real], expected[real]):
        for wrong, feedback in _mha_mistakes(reference, x, is_token):
            if close(answer[real], wrong[real]):
                return feedback
        return incorrect("the real tokens' outputs differ from MultiHeadAttention's",
                         "compare each step of your forward with MultiHeadAttention's in "
                         "notebook 5, and the mask with *The shapes, with heads*.")
    for b in range(x.shape[0]):  # each sequence alone, without its padding
        alone = x[b:b + 1, real[b]]  # (1, length, d_in)
        single = run(yours, f"{name}.forward", {"x": alone})
        if single.failed:
            return incorrect(f"{name}.forward fails on sequence {b} given alone, x of shape "
                             f"{shape_text(alone.shape)} with no padding mask "
                             f"({hint_of(single.failed).rstrip('.')})",
                             "padding_mask defaults to None: then only the causal mask "
                             "applies.")
        if not (isinstance(single.answer, torch.Tensor)
                and close(single.answer.detach()[0], answer[b, real[b]])):
            return incorrect(f"sequence {b} gives other outputs alone than in the padded batch",
                             "padding must change nothing for the real tokens.")
    return None


@exercise_check("the skeleton gives every step of notebook 5's forward but two. Step 3: add "
                "the padded keys to allowed (*The shapes, with heads*): the (B, T) mask needs "
                "an axis for the heads and one for the queries. Step 4: pass the scores and "
                "allowed to your safe_masked_softmax of exercise 1.")
def check_padded_multi_head_attention(MyMultiHeadAttention) -> Feedback:
    """Exercise: causal multi-head attention with a padding mask (the notebook's skeleton
    gives every step but the padding ones; a whole module of one's own is judged the same)."""
    name = "MyMultiHeadAttention"
    for config in MHA_CONFIGS:
        d_in, d_out, context_length, num_heads, qkv_bias = config
        sizes = (f"d_in={d_in}, d_out={d_out}, context_length={context_length}, "
                 f"num_heads={num_heads}, qkv_bias={qkv_bias}")
        modules, failed = _build(MyMultiHeadAttention, name, config)
        if failed:
            if failed.status == NOT_ATTEMPTED:
                return not_attempted(name)
            return with_context(failed, f"built with {sizes}")
        reference, yours = modules
        for x, is_token, what in _mha_inputs(d_in, context_length):
            on = f"{sizes}; x of shape {shape_text(x.shape)}, {what}"
            wrong = _mha_case(yours, reference, x, is_token, name, on)
            if wrong:
                if wrong.status == NOT_ATTEMPTED:
                    return not_attempted(f"{name}.forward")
                return with_context(wrong, on)
    wrong = _dropout_feedback(MyMultiHeadAttention, name)
    if wrong:
        return wrong
    return correct("your module matches MultiHeadAttention on every real token, with padding "
                   "on either side, and each sequence gives the same outputs alone.")


def _dropout_feedback(cls, name):
    """Feedback when dropout is on in eval mode or never on in training mode, else None."""
    config = MHA_CONFIGS[0]
    modules, failed = _build(cls, name, config, dropout=0.5)
    if failed:
        return failed
    reference, yours = modules
    x, is_token, _ = _mha_inputs(config[0], config[2])[0]
    on = "built with dropout=0.5"
    evaluated = run(yours, f"{name}.forward", {"x": x, "padding_mask": is_token})
    if evaluated.failed:
        return with_context(evaluated.failed, on)
    with torch.no_grad():
        expected = reference(x, is_token)
    if not (isinstance(evaluated.answer, torch.Tensor)
            and close(evaluated.answer[is_token], expected[is_token])):
        return incorrect(f"{on}, in eval mode the output differs from MultiHeadAttention's: "
                         "dropout must be off in eval mode", "an nn.Dropout module follows "
                                                             "train() and eval() by itself.")
    with seeded(5):
        trained = run(yours.train(), f"{name}.forward", {"x": x, "padding_mask": is_token})
    if trained.failed:
        return with_context(trained.failed, f"{on}, in training mode")
    if isinstance(trained.answer, torch.Tensor) and close(trained.answer, evaluated.answer):
        return incorrect(f"{on}, training mode gives the same output as eval mode: the "
                         "attention weights are never dropped", "apply the dropout module to "
                                                                "the attention weights.")
    return None
