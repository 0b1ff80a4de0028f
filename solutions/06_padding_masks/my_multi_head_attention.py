import torch
from torch import nn


class MyMultiHeadAttention(nn.Module):
    """Causal multi-head attention that also hides padded keys.

    x (B, T, d_in), padding_mask (B, T) True at real tokens (or None) -> (B, T, d_out).
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.num_heads, self.head_dim, self.d_out = num_heads, d_out // num_heads, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        causal = torch.ones(context_length, context_length, dtype=torch.bool).tril()
        self.register_buffer("causal_mask", causal, persistent=False)  # True = may attend

    def forward(self, x, padding_mask=None):
        B, T, _ = x.shape  # batch, tokens, input features

        def split(features):  # (B, T, d_out) -> (B, H, T, head_dim)
            return features.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

        # 1) project and split into heads
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        # 2) scores: (B, H, T, head_dim) @ (B, H, head_dim, T) -> (B, H, T, T)
        scores = queries @ keys.transpose(-2, -1) / self.head_dim**0.5
        # 3) mask: causal, and no padded key; True = may attend
        allowed = self.causal_mask[:T, :T]  # (T, T)
        if padding_mask is not None:
            allowed = allowed & padding_mask[:, None, None, :]  # (B, 1, T, T)
        scores = scores.masked_fill(~allowed, float("-inf"))
        no_key = ~allowed.any(dim=-1, keepdim=True)  # rows with nothing allowed (left padding)
        scores = scores.masked_fill(no_key, 0.0)  # finite there: no NaN, forward or backward
        weights = torch.softmax(scores, dim=-1).masked_fill(no_key, 0.0)
        # 4) dropout on the weights, mix the values, merge the heads, project
        context = self.dropout(weights) @ values  # (B, H, T, head_dim)
        context = context.transpose(1, 2).contiguous().view(B, T, self.d_out)  # (B, T, d_out)
        return self.out_proj(context)
