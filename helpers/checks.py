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


# ---------------------------------------------------------------- notebook 06: padding masks


def _as_message(failed: Feedback) -> str:
    return failed.message[len("Incorrect: "):]


def _mask_cases():
    """(lengths, T, side): unsorted lengths, padding in most sequences, both sides."""
    # Masking query rows as well as key columns gives the right mask on left padding (the
    # padded rows see only padding anyway) and the query-row mask on right padding.
    return [([4, 1, 3], 5, "left"), ([4, 1, 3], 5, "right"), ([2, 5], 5, "right")]


def _padding_mask_for(lengths, T: int, side: str) -> torch.Tensor:
    from helpers.attention import padding_mask

    return padding_mask(lengths, T, side=side)  # (B, T), True at real tokens


def _combined_mask_mistakes(lengths, T: int, side: str):
    from helpers.attention import causal_mask

    is_token = _padding_mask_for(lengths, T, side)  # (B, T)
    causal = causal_mask(T)  # (T, T)
    keys = is_token[:, None, None, :]  # (B, 1, 1, T)
    queries = is_token[:, None, :, None]  # (B, 1, T, 1)
    expected = causal & keys  # (B, 1, T, T)
    other_side = _padding_mask_for(lengths, T, "left" if side == "right" else "right")
    mistakes = [
        (causal & queries,
         "this hides padded QUERIES (rows): their rows are left with no key at all (NaN in a "
         "plain softmax), and after left padding real tokens still attend to padding. A "
         "padding mask hides padded KEYS, the last dimension: is_token[:, None, None, :]."),
        (~expected,
         "True and False are swapped: this mask is True where a query may NOT attend (what "
         "masked_fill wants). Attention masks here, like F.scaled_dot_product_attention's, are "
         "True where a query may attend."),
        (causal & ~keys,
         "the padding part is inverted: it lets queries attend to padding and hides the real "
         "tokens. Real tokens are where input_ids != pad_id."),
        (keys.expand(expected.shape),
         "the causal part is missing: every query sees every real token, later ones included. "
         "Combine with causal_mask(T) using &."),
        (causal & other_side[:, None, None, :],
         f"the padding is on the wrong side: side={side!r} puts the padding "
         f"{'after' if side == 'right' else 'before'} the tokens."),
        (~torch.ones(T, T, dtype=torch.bool).triu() & keys,
         "the diagonal is blocked: a token must be able to attend to itself (tril keeps the "
         "diagonal)."),
    ]
    return expected, mistakes


def check_causal_padding_mask(combined_mask) -> Feedback:
    """Exercise: combined_mask(lengths, T, side) -> (B, 1, T, T), True = may attend."""
    name = "combined_mask"
    for lengths, T, side in _mask_cases():
        B = len(lengths)
        answer, failed = _call(combined_mask, name, list(lengths), T, side)
        if failed:
            return failed
        if isinstance(answer, torch.Tensor):
            if answer.dtype != torch.bool:
                return _incorrect(f"{name} returned a {answer.dtype} tensor; the mask must be "
                                  "boolean (a float mask is ADDED to the scores, so 0/1 masks "
                                  "nothing). Use comparisons and &, or .bool().")
            shape = tuple(answer.shape)
            if shape == (B, T, T):
                return _incorrect(f"shape (B, T, T) = {shape} does not broadcast over the heads "
                                  "of (B, H, T, T) scores: add the head dimension, "
                                  "mask[:, None] -> (B, 1, T, T).")
            if shape == (B, 1, 1, T):
                return _incorrect("(B, 1, 1, T) is the key-padding mask alone; combine it with "
                                  "the causal mask (T, T) using & to get (B, 1, T, T).")
            if shape in ((T, T), (1, 1, T, T)):
                return _incorrect(f"shape {shape} is the same for every sequence: the padding "
                                  "part is missing, and it differs per sequence (B first).")
        expected, mistakes = _combined_mask_mistakes(lengths, T, side)
        result = _compare(answer.int() if isinstance(answer, torch.Tensor) else answer,
                          expected.int(), [(wrong.int(), hint) for wrong, hint in mistakes],
                          name, f"not the right mask for lengths={lengths}, T={T}, "
                                f"side={side!r}. Build it as causal_mask(T) & "
                                "is_token[:, None, None, :].",
                          "")
        if not result.correct:
            return result
    return Feedback(CORRECT, "Correct: causal and key-padding mask in one (B, 1, T, T) boolean "
                             "mask, for both padding sides.")


def _softmax_check_inputs():
    """Scores (B=2, T=4, T=4) and a left-padded causal mask with rows that have no key."""
    from helpers.attention import causal_padding_attn_mask, padding_mask

    generator = torch.Generator().manual_seed(6)
    scores = torch.randn(2, 4, 4, generator=generator) * 2
    allowed = causal_padding_attn_mask(padding_mask([4, 2], 4, side="left"))[:, 0]  # (B, T, T)
    return scores, allowed


def check_safe_masked_softmax(safe_masked_softmax) -> Feedback:
    """Exercise: masked softmax whose rows with no allowed key are 0, NaN-free both ways."""
    name = "safe_masked_softmax"
    scores, allowed = _softmax_check_inputs()
    leaf = scores.clone().requires_grad_(True)
    try:
        answer = safe_masked_softmax(leaf, allowed.clone())
    except NotImplementedError:
        return _not_attempted(name)
    except Exception as error:
        return _incorrect(f"{name} raised {type(error).__name__}: {error}")
    if not isinstance(answer, torch.Tensor):
        return _compare(answer, scores, [], name, "", "")
    if answer.shape != scores.shape:
        return _incorrect(f"{name} returned shape {tuple(answer.shape)}, expected "
                          f"{tuple(scores.shape)}")
    no_key = ~allowed.any(dim=-1)  # (B, T)
    blocked = scores.masked_fill(~allowed, float("-inf"))
    expected = torch.softmax(blocked, dim=-1).masked_fill(no_key[..., None], 0.0)
    values = answer.detach()
    nan_rows = torch.isnan(values).any(dim=-1)  # (B, T)
    if (nan_rows & ~no_key).any():
        return _incorrect("NaN in rows that do have an allowed key: is the mask inverted? "
                          "`allowed` is True where a query MAY attend, so masked_fill wants "
                          "~allowed.")
    if nan_rows.any():
        return _incorrect("NaN in the rows with no allowed key: a softmax of nothing but -inf "
                          "is 0/0. Give those rows weights 0 (find them with "
                          "allowed.any(dim=-1)).")
    uniform = torch.full_like(scores, 1 / scores.shape[-1])
    if _close(values[no_key], uniform[no_key]):
        return _incorrect("the rows with no allowed key are spread evenly over every key "
                          "(what a finite fill like finfo.min gives): those queries then read "
                          "keys they may not see. Make those rows 0.")
    mistakes = [
        (torch.softmax(scores.masked_fill(allowed, float("-inf")), dim=-1).nan_to_num(0.0),
         "the mask is inverted: `allowed` is True where a query MAY attend, so masked_fill "
         "wants ~allowed."),
        (torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0),
         "the blocked weights are set to 0 after the softmax, so the allowed ones no longer "
         "sum to 1: set the blocked SCORES to -inf before the softmax."),
    ]
    result = _compare(values, expected, mistakes, name,
                      "the weights are wrong: -inf at the blocked scores, softmax over the "
                      "last dimension, then weights 0 in the rows with no allowed key.", "")
    if not result.correct:
        return result
    # The backward pass: the loss reads every output, so every row sends a gradient back.
    try:
        (answer * torch.arange(answer.numel()).reshape(answer.shape)).sum().backward()
    except RuntimeError as error:
        return _incorrect(f"the backward pass failed: {error}")
    if leaf.grad is None or torch.isnan(leaf.grad).any():
        return _incorrect("the weights are right, but the gradient is NaN: a NaN made in the "
                          "forward pass and replaced afterwards (nan_to_num, masked_fill on "
                          "the weights) still poisons the backward pass. Keep NaN from ever "
                          "forming: give rows with no allowed key finite scores (0, say) "
                          "before the softmax, then zero their weights.")
    return Feedback(CORRECT, "Correct: rows with no allowed key are 0, and neither the "
                             "weights nor their gradient hold a NaN.")


def _loss_check_inputs(nan_at_padding: bool):
    """logits (B=3, T=4, V=5), targets (B, T) with pad id 0 at padding, is_token (B, T)."""
    from helpers.attention import padding_mask

    generator = torch.Generator().manual_seed(60)
    is_token = padding_mask([4, 1, 3], 4, side="right")  # (B, T)
    logits = torch.randn(3, 4, 5, generator=generator)  # (B, T, V)
    targets = torch.randint(1, 5, (3, 4), generator=generator).masked_fill(~is_token, 0)
    if nan_at_padding:
        logits = logits.masked_fill(~is_token[..., None], float("nan"))
    return logits, targets, is_token


def check_masked_loss(masked_loss) -> Feedback:
    """Exercise: mean cross-entropy over the real tokens, even when padding holds NaN."""
    import torch.nn.functional as F

    name = "masked_loss"
    logits, targets, is_token = _loss_check_inputs(nan_at_padding=False)
    answer, failed = _call(masked_loss, name, logits, targets, is_token)
    if failed:
        if "Expected target size" in failed.message:
            return _incorrect(f"{_as_message(failed)}. F.cross_entropy wants the classes in "
                              "dimension 1: flatten logits to (B*T, V) and targets to (B*T,), "
                              "or select the real tokens first.")
        return failed
    if isinstance(answer, torch.Tensor) and answer.numel() != 1:
        return _incorrect(f"{name} returned shape {tuple(answer.shape)}; the loss is one "
                          "number, the mean over the real tokens.")
    per_token = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    per_token = per_token.view(is_token.shape)  # (B, T)
    real = is_token.float()
    expected = per_token[is_token].mean()
    mistakes = [
        (per_token.mean(), "the padded positions are counted: their targets are padding, not "
                           "tokens to predict. Leave them out of the loss."),
        ((per_token * real).sum() / is_token.numel(),
         "padding is zeroed, but the sum is divided by every position, B*T; divide by the "
         "number of real tokens."),
        ((per_token * real).sum(), "this is the sum; the loss is the mean over the real tokens."),
        (((per_token * real).sum(-1) / real.sum(-1)).mean(),
         "this averages each sequence, then the sequences: a short sequence's tokens count "
         "more. Average over all real tokens at once."),
    ]
    result = _compare(answer.reshape(()) if isinstance(answer, torch.Tensor) else answer,
                      expected, mistakes, name,
                      "not the mean cross-entropy over the real tokens.", "")
    if not result.correct:
        return result
    nan_logits, targets, is_token = _loss_check_inputs(nan_at_padding=True)
    answer, failed = _call(masked_loss, name, nan_logits, targets, is_token)
    if failed:
        return failed
    if torch.isnan(answer.detach()).any():
        return _incorrect("right on clean logits, but NaN when the padded positions hold NaN: "
                          "multiplying by the mask keeps NaN (NaN * 0 = NaN). Select the real "
                          "positions (logits[is_token]) or give padded targets "
                          "ignore_index=-100.")
    if not _close(answer.detach().reshape(()), expected):
        return _incorrect("the loss changes when the padded positions' logits change: padding "
                          "must not reach the loss.")
    return Feedback(CORRECT, "Correct: the mean over the real tokens, and NaN at padding "
                             "does not reach it.")
