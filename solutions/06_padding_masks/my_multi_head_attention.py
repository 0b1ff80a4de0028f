import torch

from helpers.attention import MultiHeadAttention, merge_heads, split_heads


# Exercise 1's answer, which step 4 calls: loading this file defines it again.
def safe_masked_softmax(scores, allowed):
    """(..., T_q, T_k) -> attention weights (..., T_q, T_k); rows with no allowed key are 0."""
    no_key = ~allowed.any(dim=-1, keepdim=True)  # (..., T_q, 1): rows with nothing allowed
    # -inf at blocked keys; the empty rows finite (0): no 0/0, no NaN gradient
    masked = scores.masked_fill(~allowed, float("-inf")).masked_fill(no_key, 0.0)
    return torch.softmax(masked, dim=-1).masked_fill(no_key, 0.0)


class MyMultiHeadAttention(MultiHeadAttention):
    def forward(self, x, padding_mask=None):
        """x (B, T, d_in); padding_mask (B, T), True at real tokens, or None -> (B, T, d_out)."""
        T = x.shape[1]
        # 1) project, split into heads (notebook 5): (B, T, d_out) -> (B, H, T, head_dim)
        queries = split_heads(self.W_query(x), self.num_heads)
        keys = split_heads(self.W_key(x), self.num_heads)
        values = split_heads(self.W_value(x), self.num_heads)
        # 2) scores: (B, H, T, head_dim) @ (B, H, head_dim, T) -> (B, H, T, T)
        scores = queries @ keys.transpose(-2, -1) / self.head_dim**0.5
        allowed = self.causal_mask[:T, :T]  # (T, T), True = may attend
        if padding_mask is not None:
            # 3) hide the padded keys too
            allowed = allowed & padding_mask[:, None, None, :]  # (B, 1, T, T)
        # 4) weights (B, H, T, T): exercise 1's softmax of the scores under allowed
        weights = safe_masked_softmax(scores, allowed)  # (B, H, T, T)
        # 5) dropout on the weights, mix the values, merge the heads, project
        context = merge_heads(self.dropout(weights) @ values)  # (B, T, d_out)
        return self.out_proj(context)
