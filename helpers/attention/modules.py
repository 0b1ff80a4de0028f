"""Attention layers as nn.Modules: SelfAttention (notebook 1), CausalAttention
(notebook 4), MultiHeadAttentionWrapper and MultiHeadAttention (notebook 5).

Layers are built in the order W_query, W_key, W_value (then out_proj), as in the reference
material, so that the same seed gives the same starting weights.
"""

import torch
from torch import nn

from helpers.attention.checked import CheckedModule
from helpers.attention.core import (
    attention_weights,
    causal_mask,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from helpers.attention.masking import check_padding_mask
from helpers.validation import (
    check_positive_int,
    check_probability,
    check_tensor,
    shape_text,
)


def _check_dtype(x: torch.Tensor, module: nn.Module) -> None:
    dtype = next(module.parameters()).dtype
    if x.dtype != dtype:
        raise TypeError(
            f"x must have the dtype of the module's weights ({dtype}), got {x.dtype}; "
            f"convert x with x.to({dtype}) or the module with module.to({x.dtype})"
        )


def _check_sizes(d_in, d_out, context_length=None) -> None:
    check_positive_int(d_in, "d_in")
    check_positive_int(d_out, "d_out")
    if context_length is not None:
        check_positive_int(context_length, "context_length")


def _check_sequence(module: nn.Module, x, padding_mask=None) -> None:
    """x (B, T, d_in) with T <= context_length, in the dtype of the module's weights;
    padding_mask None or (B, T) boolean."""
    d_in, context_length = module.W_query.in_features, module.causal_mask.shape[0]
    check_tensor(x, "x", ndim=3)
    B, T, features = x.shape
    if features != d_in:
        raise ValueError(
            f"x must have d_in={d_in} features in its last dimension, got shape {shape_text(x)} "
            "(expected (B, T, d_in))"
        )
    if T > context_length:
        raise ValueError(
            f"x has T={T} tokens but this module was built for context_length={context_length}; "
            "build it with a larger context_length or shorten the sequence"
        )
    _check_dtype(x, module)
    if padding_mask is not None:
        check_padding_mask(padding_mask, B, T)


class SelfAttention(CheckedModule):
    """Self-attention with trainable query, key and value projections, no mask.

    x (T, d_in) or (B, T, d_in) -> context vectors (T, d_out) or (B, T, d_out).
    The three layers are built in the order W_query, W_key, W_value: with the same seed,
    the same order gives the same initial weights as in Raschka's book, "Build a Large
    Language Model (From Scratch)" (Manning, 2024), chapter 3. Arguments and inputs are
    checked apart (``check_arguments``, ``check_input``), so the code below is the layer.
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor, return_weights: bool = False):
        queries = self.W_query(x)  # (..., T, d_out)
        keys = self.W_key(x)  # (..., T, d_out)
        values = self.W_value(x)  # (..., T, d_out)
        context, weights = scaled_dot_product_attention(queries, keys, values)
        return (context, weights) if return_weights else context

    @staticmethod
    def check_arguments(d_in, d_out, qkv_bias) -> None:
        _check_sizes(d_in, d_out)

    def check_input(self, x, return_weights=False) -> None:
        """x (T, d_in) or (B, T, d_in), in the dtype of the module's weights."""
        d_in = self.W_query.in_features
        check_tensor(x, "x", ndim=(2, 3))
        if x.shape[-1] != d_in:
            raise ValueError(
                f"x must have d_in={d_in} features in its last dimension, got shape "
                f"{shape_text(x)} (expected (T, d_in) or (B, T, d_in))"
            )
        _check_dtype(x, self)


class CausalAttention(CheckedModule):
    """Single-head causal self-attention with dropout on the attention weights.

    x (B, T, d_in) -> context vectors (B, T, d_out), with T <= context_length.
    The causal mask is built once for ``context_length`` and kept as a buffer, so it moves
    with the module (``.to(device)``); each forward slices it down to the actual T.
    Layers are built in the order W_query, W_key, W_value, as in Raschka's book.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float = 0.0,
                 qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # Derived from context_length, so not saved in the state dict.
        mask = causal_mask(context_length)  # (context_length, context_length)
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, x: torch.Tensor, padding_mask=None, return_weights: bool = False):
        """x (B, T, d_in); padding_mask (B, T), True at real tokens, hides padding."""
        B, T, _ = x.shape
        queries = self.W_query(x)  # (B, T, d_out)
        keys = self.W_key(x)  # (B, T, d_out)
        values = self.W_value(x)  # (B, T, d_out)
        mask = self.causal_mask[:T, :T]  # (T, T)
        if padding_mask is not None:
            mask = mask & padding_mask[:, None, :]  # (B, T, T)
        weights = attention_weights(queries, keys, attn_mask=mask)  # (B, T, T)
        weights = self.dropout(weights)  # active in train(), off in eval()
        context = weights @ values  # (B, T, T) @ (B, T, d_out) -> (B, T, d_out)
        return (context, weights) if return_weights else context

    @staticmethod
    def check_arguments(d_in, d_out, context_length, dropout, qkv_bias) -> None:
        _check_sizes(d_in, d_out, context_length)
        check_probability(dropout, "dropout")

    def check_input(self, x, padding_mask=None, return_weights=False) -> None:
        _check_sequence(self, x, padding_mask)


class MultiHeadAttentionWrapper(CheckedModule):
    """``num_heads`` independent CausalAttention heads, outputs concatenated.

    x (B, T, d_in) -> (B, T, num_heads * d_out). Simple to read, slow to run: each head
    does its own projections and matrix products one after the other.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float,
                 num_heads: int, qkv_bias: bool = False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads))

    def forward(self, x: torch.Tensor, padding_mask=None) -> torch.Tensor:
        return torch.cat([head(x, padding_mask) for head in self.heads], dim=-1)

    @staticmethod
    def check_arguments(d_in, d_out, context_length, dropout, num_heads, qkv_bias) -> None:
        check_positive_int(num_heads, "num_heads")


class MultiHeadAttention(CheckedModule):
    """Causal multi-head attention: project once, split into heads, attend, merge, project.

    x (B, T, d_in) -> (B, T, d_out). Each of the ``num_heads`` heads works on
    head_dim = d_out // num_heads features. Layers are built in the order W_query, W_key,
    W_value, out_proj, as in Raschka's book.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float,
                 num_heads: int, qkv_bias: bool = False):
        super().__init__()
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes what the heads found
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("causal_mask", causal_mask(context_length), persistent=False)

    def forward(self, x: torch.Tensor, padding_mask=None, return_weights: bool = False):
        """x (B, T, d_in); padding_mask (B, T), True at real tokens, hides padding."""
        B, T, _ = x.shape
        queries = split_heads(self.W_query(x), self.num_heads)  # (B, H, T, head_dim)
        keys = split_heads(self.W_key(x), self.num_heads)  # (B, H, T, head_dim)
        values = split_heads(self.W_value(x), self.num_heads)  # (B, H, T, head_dim)
        mask = self.causal_mask[:T, :T]  # (T, T)
        if padding_mask is not None:
            mask = mask & padding_mask[:, None, None, :]  # (B, 1, T, T)
        weights = attention_weights(queries, keys, attn_mask=mask)
        weights = self.dropout(weights)  # (B, H, T, T)
        context = weights @ values  # (B, H, T, T) @ (B, H, T, head_dim) -> (B, H, T, head_dim)
        context = merge_heads(context)  # (B, T, d_out): the heads side by side
        output = self.out_proj(context)  # (B, T, d_out)
        return (output, weights) if return_weights else output

    @staticmethod
    def check_arguments(d_in, d_out, context_length, dropout, num_heads, qkv_bias) -> None:
        _check_sizes(d_in, d_out, context_length)
        check_positive_int(num_heads, "num_heads")
        check_probability(dropout, "dropout")
        if d_out % num_heads != 0:
            raise ValueError(
                f"d_out must be divisible by num_heads so that every head gets the same size, "
                f"got d_out={d_out} and num_heads={num_heads}"
            )

    def check_input(self, x, padding_mask=None, return_weights=False) -> None:
        _check_sequence(self, x, padding_mask)
