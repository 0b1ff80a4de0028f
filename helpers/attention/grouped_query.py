"""Grouped-query attention (Ainslie et al., 2023): notebook 5's MultiHeadAttention with
fewer key/value heads than query heads (notebook 09).

``num_heads`` query heads share ``num_kv_heads`` key/value heads, each serving a group of
``num_heads // num_kv_heads`` neighbouring query heads: a KV cache keeps num_kv_heads
heads of keys and values instead of num_heads. ``num_kv_heads == num_heads`` is
multi-head attention; ``num_kv_heads == 1`` is multi-query attention (Shazeer, 2019).

Letters: B batch, T tokens, H query heads, H_kv key/value heads, head_dim.
"""

import torch
from torch import nn

from helpers.attention.checked import CheckedModule
from helpers.attention.core import attention_weights, causal_mask, merge_heads, split_heads
from helpers.attention.modules import MultiHeadAttention
from helpers.validation import check_positive_int


class GroupedQueryAttention(CheckedModule):
    """Causal attention with num_heads query heads and num_kv_heads key/value heads.

    x (B, T, d_in) -> (B, T, d_out). Built as MultiHeadAttention, layers in the same order
    (W_query, W_key, W_value, out_proj): with num_kv_heads == num_heads and the same seed,
    it has the same weights and gives the same output, up to float32 rounding.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float,
                 num_heads: int, num_kv_heads: int, qkv_bias: bool = False):
        super().__init__()
        self.d_out = d_out
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads  # New
        self.group_size = num_heads // num_kv_heads  # New: query heads per key/value head
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        kv_width = num_kv_heads * self.head_dim  # New: H_kv heads of head_dim, not H
        self.W_key = nn.Linear(d_in, kv_width, bias=qkv_bias)  # Changed
        self.W_value = nn.Linear(d_in, kv_width, bias=qkv_bias)  # Changed
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("causal_mask", causal_mask(context_length), persistent=False)

    def forward(self, x: torch.Tensor, padding_mask=None, return_weights: bool = False):
        """x (B, T, d_in); padding_mask (B, T), True at real tokens, hides padding."""
        B, T, _ = x.shape
        queries = split_heads(self.W_query(x), self.num_heads)  # (B, H, T, head_dim)
        keys = split_heads(self.W_key(x), self.num_kv_heads)  # Changed: H_kv heads
        values = split_heads(self.W_value(x), self.num_kv_heads)  # Changed: H_kv
        # each key/value head serves the group_size query heads next to each other
        keys = keys.repeat_interleave(self.group_size, dim=1)  # New: (B, H, T, head_dim)
        values = values.repeat_interleave(self.group_size, dim=1)  # New: (B, H, T, head_dim)
        mask = self.causal_mask[:T, :T]  # (T, T)
        if padding_mask is not None:
            mask = mask & padding_mask[:, None, None, :]  # (B, 1, T, T)
        weights = attention_weights(queries, keys, attn_mask=mask)
        weights = self.dropout(weights)  # (B, H, T, T)
        context = weights @ values  # (B, H, T, T) @ (B, H, T, head_dim) -> (B, H, T, head_dim)
        context = merge_heads(context)  # (B, T, d_out)
        output = self.out_proj(context)  # (B, T, d_out)
        return (output, weights) if return_weights else output

    @staticmethod
    def check_arguments(d_in, d_out, context_length, dropout, num_heads, num_kv_heads,
                        qkv_bias) -> None:
        MultiHeadAttention.check_arguments(d_in, d_out, context_length, dropout, num_heads,
                                           qkv_bias)
        check_positive_int(num_kv_heads, "num_kv_heads")
        if num_heads % num_kv_heads != 0:
            raise ValueError(
                f"num_heads must be divisible by num_kv_heads so that every key/value head "
                f"serves the same number of query heads, got num_heads={num_heads} and "
                f"num_kv_heads={num_kv_heads}")

    # x (B, T, d_in) with T <= context_length, in the weights' dtype; as MultiHeadAttention
    check_input = MultiHeadAttention.check_input
