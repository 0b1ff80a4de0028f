"""Masks: the two causal-masking strategies (notebook 2) and padding masks (notebook 6)."""

import torch

from helpers.attention.core import causal_mask
from helpers.validation import (
    broadcast_shape,
    check_positive_int,
    check_tensor,
    shape_text,
)

#
# Two ways to keep a query from attending to the keys after it. Both take the scores
# (..., T_q, T_k) and a boolean mask, True where a query may attend (the convention above),
# and return weights (..., T_q, T_k) whose allowed entries in each row sum to 1.


def _check_scores_and_mask(scores, mask) -> torch.Tensor:
    """The boolean mask to use: ``mask`` checked against ``scores``, or the causal one."""
    check_tensor(scores, "scores", min_ndim=2)
    T_q, T_k = scores.shape[-2:]
    if mask is None:
        # Top-left aligned, as torch's is_causal=True: query i sees keys 0..i.
        return causal_mask(max(T_q, T_k), device=scores.device)[:T_q, :T_k]
    check_tensor(mask, "mask", min_ndim=2, floating=False)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be a boolean tensor, True where a query may attend, got {mask.dtype} "
            "(a 0/1 mask from torch.tril becomes one with .bool(); a 0/-inf additive mask "
            "with == 0)"
        )
    if broadcast_shape(mask.shape, scores.shape) != tuple(scores.shape):
        raise ValueError(
            f"mask of shape {shape_text(mask)} cannot be broadcast to scores of shape "
            f"{shape_text(scores)} = (..., T_query, T_key); a mask built for a longer "
            "context is sliced first: mask[:T_query, :T_key]"
        )
    return mask


def masked_weights_by_renormalising(scores: torch.Tensor, mask=None) -> torch.Tensor:
    """Strategy 1: softmax over every key, zero the blocked weights, rescale each row to sum 1.

    scores (..., T_q, T_k); mask boolean, broadcastable to scores, True where a query may
    attend (default: causal, query i sees keys 0..i). Returns weights (..., T_q, T_k).

    A row with no allowed key gets weights 0, as in ``attention_weights``. A row whose
    allowed weights all underflowed to 0 in the first softmax (a blocked score far above
    the allowed ones) comes out NaN: the weakness of this strategy, shown in notebook 02.
    """
    mask = _check_scores_and_mask(scores, mask)
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k), still attending to the future
    kept = weights.masked_fill(~mask, 0.0)  # the mask says who may attend; ~ gives who may not
    row_sums = kept.sum(dim=-1, keepdim=True)  # (..., T_q, 1), below 1 wherever keys were cut
    weights = kept / row_sums
    no_key = ~mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    return weights.masked_fill(no_key, 0.0)


def masked_weights_by_neg_inf(scores: torch.Tensor, mask=None) -> torch.Tensor:
    """Strategy 2: set the blocked scores to -inf, then one softmax (exp(-inf) = 0).

    scores (..., T_q, T_k); mask boolean, broadcastable to scores, True where a query may
    attend (default: causal, query i sees keys 0..i). Returns weights (..., T_q, T_k).

    A row with no allowed key would be a softmax of nothing but -inf, which is NaN; like
    ``attention_weights`` and PyTorch, its weights are 0 instead.
    """
    mask = _check_scores_and_mask(scores, mask)
    blocked_scores = scores.masked_fill(~mask, float("-inf"))  # masked_fill wants True = blocked
    weights = torch.softmax(blocked_scores, dim=-1)  # (..., T_q, T_k)
    no_key = ~mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    return weights.masked_fill(no_key, 0.0)


PADDING_SIDES = ("right", "left")


def padding_mask(lengths, T: int = None, *, side: str = "right") -> torch.Tensor:
    """Boolean (B, T), True at real tokens and False at padding, for sequences of ``lengths``.

    ``side="right"`` puts the padding after each sequence's tokens, ``"left"`` before them.
    ``T`` defaults to the longest length.

    >>> padding_mask([3, 1], side="left").int()
    tensor([[1, 1, 1],
            [0, 0, 1]], dtype=torch.int32)
    """
    if isinstance(lengths, torch.Tensor):
        if lengths.ndim != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
            raise TypeError(f"lengths must be a 1-d integer tensor or a list of ints, got "
                            f"{lengths.dtype} tensor of shape {shape_text(lengths)}")
        lengths = lengths.tolist()
    if not isinstance(lengths, (list, tuple)) or not lengths:
        raise TypeError(f"lengths must be a non-empty list of ints, got {lengths!r}")
    for length in lengths:
        if isinstance(length, bool) or not isinstance(length, int):
            raise TypeError(f"lengths must hold ints, got {type(length).__name__} ({length!r})")
        if length < 0:
            raise ValueError(f"lengths must be at least 0, got {length}")
    T = max(lengths) if T is None else check_positive_int(T, "T")
    if max(lengths) > T:
        raise ValueError(f"a length of {max(lengths)} does not fit in T={T} positions")
    if side not in PADDING_SIDES:
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    positions = torch.arange(T)  # (T,)
    counts = torch.tensor(lengths).unsqueeze(1)  # (B, 1)
    if side == "right":
        return positions < counts  # (B, T): the first `length` positions are tokens
    return positions >= T - counts  # (B, T): the last `length` positions are tokens


def check_padding_mask(is_token, B: int, T: int) -> torch.Tensor:
    """Check a (B, T) boolean padding mask (True = real token); return it unchanged."""
    check_tensor(is_token, "padding_mask", ndim=2, floating=False)
    if is_token.dtype != torch.bool:
        raise TypeError(
            f"padding_mask must be boolean (True = real token), got {is_token.dtype}; "
            "build it from the lengths (padding_mask(lengths, T, side=...)), or convert a "
            "0/1 mask with .bool()"
        )
    if tuple(is_token.shape) != (B, T):
        raise ValueError(
            f"padding_mask must have shape (B, T) = ({B}, {T}), one entry per token of x, "
            f"got {shape_text(is_token)}"
        )
    return is_token


def position_ids(is_token: torch.Tensor) -> torch.Tensor:
    """(B, T) padding mask -> (B, T) integer positions counted over the real tokens only.

    Each real token gets its index among its sequence's real tokens, whichever side the
    padding is on: ``cumsum - 1`` along T. Padded positions get 0 (any valid index would
    do: their keys are hidden and their outputs are not used). With learned absolute
    position embeddings and left padding, ``torch.arange(T)`` would give the first real
    token of a padded sequence the position of the padding before it; these ids give it 0,
    as when the sequence runs alone.

    >>> position_ids(padding_mask([3, 1], side="left"))
    tensor([[0, 1, 2],
            [0, 0, 0]])
    """
    check_tensor(is_token, "padding_mask", ndim=2, floating=False)
    check_padding_mask(is_token, *is_token.shape)
    counted = is_token.long().cumsum(dim=-1) - 1  # (B, T): -1 before a sequence's first token
    return counted.masked_fill(~is_token, 0)  # (B, T)


def key_padding_attn_mask(is_token: torch.Tensor) -> torch.Tensor:
    """(B, T) padding mask -> (B, 1, 1, T) attention mask that hides padded **keys**.

    The two 1s broadcast over heads and over queries: every query of a sequence, in every
    head, may attend to that sequence's real tokens and to none of its padding.
    """
    check_tensor(is_token, "padding_mask", ndim=2, floating=False)
    check_padding_mask(is_token, *is_token.shape)
    return is_token[:, None, None, :]  # (B, 1, 1, T)


def causal_padding_attn_mask(is_token: torch.Tensor) -> torch.Tensor:
    """(B, T) padding mask -> (B, 1, T, T): causal **and** not a padded key."""
    check_tensor(is_token, "padding_mask", ndim=2, floating=False)
    T = is_token.shape[-1]
    return causal_mask(T, device=is_token.device) & key_padding_attn_mask(is_token)
