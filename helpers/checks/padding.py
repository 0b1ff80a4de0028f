"""Checks for notebook 06's exercises: the combined causal and padding mask, a masked
softmax that never makes a NaN, and a loss that ignores padding."""

import warnings

import torch
import torch.nn.functional as F

from helpers.attention import causal_mask, causal_padding_attn_mask, padding_mask
from helpers.checks.feedback import (
    Feedback,
    attempt,
    call,
    close,
    compare,
    correct,
    hint_of,
    incorrect,
    tensor_problem,
)


def _mask_cases():
    """(lengths, T, side): unsorted lengths, padding in most sequences, both sides."""
    # Masking query rows as well as key columns gives the right mask on left padding (the
    # padded rows see only padding anyway) and the query-row mask on right padding.
    return [([4, 1, 3], 5, "left"), ([4, 1, 3], 5, "right"), ([2, 5], 5, "right")]


def _padding_mask_for(lengths, T: int, side: str) -> torch.Tensor:
    return padding_mask(lengths, T, side=side)  # (B, T), True at real tokens


def _combined_mask_mistakes(lengths, T: int, side: str):
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
        answer, failed = call(combined_mask, name, list(lengths), T, side)
        if failed:
            return failed
        if isinstance(answer, torch.Tensor):
            if answer.dtype != torch.bool:
                return incorrect(f"{name} returned a {answer.dtype} tensor; the mask must be "
                                 "boolean (a float mask is ADDED to the scores, so 0/1 masks "
                                 "nothing). Use comparisons and &, or .bool().")
            shape = tuple(answer.shape)
            if shape == (B, T, T):
                return incorrect(f"shape (B, T, T) = {shape} does not broadcast over the heads "
                                 "of (B, H, T, T) scores: add the head dimension, "
                                 "mask[:, None] -> (B, 1, T, T).")
            if shape == (B, 1, 1, T):
                return incorrect("(B, 1, 1, T) is the key-padding mask alone; combine it with "
                                 "the causal mask (T, T) using & to get (B, 1, T, T).")
            if shape in ((T, T), (1, 1, T, T)):
                return incorrect(f"shape {shape} is the same for every sequence: the padding "
                                 "part is missing, and it differs per sequence (B first).")
        expected, mistakes = _combined_mask_mistakes(lengths, T, side)
        result = compare(answer.int() if isinstance(answer, torch.Tensor) else answer,
                         expected.int(), [(wrong.int(), hint) for wrong, hint in mistakes],
                         name, f"not the right mask for lengths={lengths}, T={T}, "
                                f"side={side!r}. Build it as causal_mask(T) & "
                                "is_token[:, None, None, :].",
                         "")
        if not result.correct:
            return result
    return correct("causal and key-padding mask in one (B, 1, T, T) boolean mask, for both "
                   "padding sides.")


def _softmax_check_inputs():
    """Scores (B=2, T=4, T=4) and a left-padded causal mask with rows that have no key."""
    generator = torch.Generator().manual_seed(6)
    scores = torch.randn(2, 4, 4, generator=generator) * 2
    allowed = causal_padding_attn_mask(padding_mask([4, 2], 4, side="left"))[:, 0]  # (B, T, T)
    return scores, allowed


def check_safe_masked_softmax(safe_masked_softmax) -> Feedback:
    """Exercise: masked softmax whose rows with no allowed key are 0, NaN-free both ways."""
    name = "safe_masked_softmax"
    scores, allowed = _softmax_check_inputs()
    leaf = scores.clone().requires_grad_(True)
    answer, failed = attempt(safe_masked_softmax, name, leaf, allowed.clone())
    problem = failed or tensor_problem(answer, name, scores.shape)
    if problem:
        return problem
    no_key = ~allowed.any(dim=-1)  # (B, T)
    blocked = scores.masked_fill(~allowed, float("-inf"))
    expected = torch.softmax(blocked, dim=-1).masked_fill(no_key[..., None], 0.0)
    values = answer.detach()
    nan_rows = torch.isnan(values).any(dim=-1)  # (B, T)
    if (nan_rows & ~no_key).any():
        return incorrect("NaN in rows that do have an allowed key: is the mask inverted? "
                         "`allowed` is True where a query MAY attend, so masked_fill wants "
                         "~allowed.")
    if nan_rows.any():
        return incorrect("NaN in the rows with no allowed key: a softmax of nothing but -inf "
                         "is 0/0. Give those rows weights 0 (find them with "
                         "allowed.any(dim=-1)).")
    uniform = torch.full_like(scores, 1 / scores.shape[-1])
    if close(values[no_key], uniform[no_key]):
        return incorrect("the rows with no allowed key are spread evenly over every key "
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
    result = compare(values, expected, mistakes, name,
                     "the weights are wrong: -inf at the blocked scores, softmax over the "
                     "last dimension, then weights 0 in the rows with no allowed key.", "")
    if not result.correct:
        return result
    # The backward pass: the loss reads every output, so every row sends a gradient back.
    # A NaN formed and replaced in the forward pass shows there: the softmax's backward
    # returns NaN for its row (anomaly mode names it), whether or not it reaches the scores.
    loss = (answer * torch.arange(answer.numel()).reshape(answer.shape)).sum()
    try:
        loss.backward(retain_graph=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # anomaly mode announces itself with a warning
            with torch.autograd.detect_anomaly(check_nan=True):
                torch.autograd.grad(loss, leaf)
    except RuntimeError as error:
        if "nan values" not in str(error):
            return incorrect(f"the backward pass failed: {error}")
        reaches = leaf.grad is None or torch.isnan(leaf.grad).any()
        return incorrect(
            "the weights are right, but a NaN formed on the way: the softmax of a row with "
            "no allowed key made NaN, replaced afterwards (nan_to_num, masked_fill on the "
            "weights), and its gradient is NaN too"
            + (", all the way back to the scores. " if reaches else
               "; here masked_fill on the scores happens to stop it, a mask added to the "
               "scores would not. ")
            + "Keep NaN from ever forming: give rows with no allowed key finite scores "
            "(0, say) before the softmax, then zero their weights.")
    return correct("rows with no allowed key are 0, and neither the weights nor their "
                   "gradient hold a NaN.")


def _loss_check_inputs(nan_at_padding: bool):
    """logits (B=3, T=4, V=5), targets (B, T) with pad id 0 at padding, is_token (B, T)."""
    generator = torch.Generator().manual_seed(60)
    is_token = padding_mask([4, 1, 3], 4, side="right")  # (B, T)
    logits = torch.randn(3, 4, 5, generator=generator)  # (B, T, V)
    targets = torch.randint(1, 5, (3, 4), generator=generator).masked_fill(~is_token, 0)
    if nan_at_padding:
        logits = logits.masked_fill(~is_token[..., None], float("nan"))
    return logits, targets, is_token


def check_masked_loss(masked_loss) -> Feedback:
    """Exercise: mean cross-entropy over the real tokens, even when padding holds NaN."""
    name = "masked_loss"
    logits, targets, is_token = _loss_check_inputs(nan_at_padding=False)
    answer, failed = call(masked_loss, name, logits, targets, is_token)
    if failed:
        if "Expected target size" in failed.message:
            return incorrect(f"{hint_of(failed)}. F.cross_entropy wants the classes in "
                             "dimension 1: flatten logits to (B*T, V) and targets to (B*T,), "
                             "or select the real tokens first.")
        return failed
    if isinstance(answer, torch.Tensor) and answer.numel() != 1:
        return incorrect(f"{name} returned shape {tuple(answer.shape)}; the loss is one "
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
    result = compare(answer.reshape(()) if isinstance(answer, torch.Tensor) else answer,
                     expected, mistakes, name,
                     "not the mean cross-entropy over the real tokens.", "")
    if not result.correct:
        return result
    nan_logits, targets, is_token = _loss_check_inputs(nan_at_padding=True)
    answer, failed = call(masked_loss, name, nan_logits, targets, is_token)
    if failed:
        return failed
    if torch.isnan(answer.detach()).any():
        return incorrect("right on clean logits, but NaN when the padded positions hold NaN: "
                         "multiplying by the mask keeps NaN (NaN * 0 = NaN). Select the real "
                         "positions (logits[is_token]) or give padded targets "
                         "ignore_index=-100.")
    if not close(answer.detach().reshape(()), expected):
        return incorrect("the loss changes when the padded positions' logits change: padding "
                         "must not reach the loss.")
    return correct("the mean over the real tokens, and NaN at padding does not reach it.")
