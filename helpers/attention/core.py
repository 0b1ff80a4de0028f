"""Scores, weights and scaled dot-product attention, written out step by step.

Mask convention, as in ``torch.nn.functional.scaled_dot_product_attention``: a boolean
mask is True where a query **may attend** to a key; a float mask is **added** to the scores.
"""

import math

import torch
from torch import nn

from helpers.validation import (
    broadcast_shape,
    check_positive_int,
    check_positive_number,
    check_probability,
    check_tensor,
    shape_text,
)


def causal_mask(T: int, *, device=None) -> torch.Tensor:
    """Boolean (T, T) mask, True where query i may attend to key j, i.e. j <= i.

    >>> causal_mask(3).int()
    tensor([[1, 0, 0],
            [1, 1, 0],
            [1, 1, 1]], dtype=torch.int32)
    """
    check_positive_int(T, "T")
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def _check_mask(attn_mask, scores_shape: torch.Size) -> torch.Tensor:
    check_tensor(attn_mask, "attn_mask", min_ndim=2, floating=False)
    if not (attn_mask.dtype == torch.bool or attn_mask.is_floating_point()):
        raise TypeError(
            "attn_mask must be a boolean tensor (True = may attend) or a float tensor "
            f"(added to the scores), got {attn_mask.dtype}"
        )
    if broadcast_shape(attn_mask.shape, scores_shape) != tuple(scores_shape):
        raise ValueError(
            f"attn_mask of shape {shape_text(attn_mask)} cannot be broadcast to the "
            f"attention scores, shape ({', '.join(map(str, scores_shape))}) = (..., T_query, T_key)"
        )
    return attn_mask


def attention_scores(query: torch.Tensor, key: torch.Tensor, scale=None) -> torch.Tensor:
    """Scaled dot products of every query with every key.

    query (..., T_q, d_k) and key (..., T_k, d_k) give scores (..., T_q, T_k), multiplied
    by ``scale`` (default 1 / sqrt(d_k)).
    """
    check_tensor(query, "query", min_ndim=2)
    check_tensor(key, "key", min_ndim=2)
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            "query and key must have the same size in their last dimension (d_k), got "
            f"query {shape_text(query)} and key {shape_text(key)}"
        )
    if query.dtype != key.dtype:
        raise TypeError(
            f"query and key must have the same dtype, got {query.dtype} and {key.dtype}")
    if broadcast_shape(query.shape[:-2], key.shape[:-2]) is None:
        raise ValueError(
            "query and key must have matching (or broadcastable) leading dimensions, got "
            f"query {shape_text(query)} and key {shape_text(key)}"
        )
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    else:
        scale = check_positive_number(scale, "scale")
    # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    return (query @ key.transpose(-2, -1)) * scale


def attention_weights(
    query: torch.Tensor, key: torch.Tensor, attn_mask=None, is_causal=False, scale=None
) -> torch.Tensor:
    """Softmax of the masked, scaled scores: weights (..., T_q, T_k), each row summing to 1.

    A row in which every key is masked has no key to attend to; like PyTorch, its weights
    are all 0 (a plain softmax would give NaN there).
    """
    scores = attention_scores(query, key, scale)
    T_q, T_k = scores.shape[-2:]
    if is_causal and attn_mask is not None:
        raise ValueError("give either attn_mask or is_causal=True, not both: combine them into "
                         "one attn_mask (PyTorch's math backend refuses the pair; its flash "
                         "kernel applies both)")
    if is_causal:
        # Top-left aligned, as in PyTorch: query i sees keys 0..i.
        attn_mask = torch.ones(T_q, T_k, dtype=torch.bool, device=scores.device).tril()
    if attn_mask is not None:
        _check_mask(attn_mask, scores.shape)
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.to(scores.dtype)
    # A row with no key is given finite scores before the softmax and zeros after it: no
    # NaN forms, so none reaches the gradients either, however the mask was applied.
    fully_masked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(fully_masked, 0.0), dim=-1)
    return weights.masked_fill(fully_masked, 0.0)


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale=None,
):
    """Attention written out step by step; returns ``(output, weights)``.

    Same arguments and output as ``torch.nn.functional.scaled_dot_product_attention``,
    which returns only the output:

    - query (..., T_q, d_k), key (..., T_k, d_k), value (..., T_k, d_v)
    - output (..., T_q, d_v), weights (..., T_q, T_k)

    ``dropout_p`` > 0 drops weights at random and scales the kept ones by 1/(1 - p),
    always, as PyTorch's function does (it has no train/eval switch); the weights
    returned are the ones that multiplied ``value``.
    """
    check_tensor(value, "value", min_ndim=2)
    dropout_p = check_probability(dropout_p, "dropout_p")
    weights = attention_weights(query, key, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(
            "key and value must have the same number of tokens (dimension -2), got "
            f"key {shape_text(key)} and value {shape_text(value)}"
        )
    if value.dtype != query.dtype:
        raise TypeError(f"value must have the dtype of query ({query.dtype}), got {value.dtype}")
    if broadcast_shape(weights.shape[:-2], value.shape[:-2]) is None:
        raise ValueError(
            "value's leading dimensions do not match query's and key's, got "
            f"query {shape_text(query)}, key {shape_text(key)} and value {shape_text(value)}"
        )
    if dropout_p > 0.0:
        weights = nn.functional.dropout(weights, p=dropout_p, training=True)
    # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return weights @ value, weights


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, width) -> (B, num_heads, T, width // num_heads): each token's features cut
    into num_heads equal pieces, one per head (notebook 05's exercise)."""
    B, T, width = x.shape
    x = x.view(B, T, num_heads, width // num_heads)  # (B, T, H, head_dim)
    return x.transpose(1, 2)  # (B, H, T, head_dim)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, head_dim) -> (B, T, H * head_dim): the heads' outputs side by side, the
    inverse of split_heads."""
    B, H, T, head_dim = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, H * head_dim)
