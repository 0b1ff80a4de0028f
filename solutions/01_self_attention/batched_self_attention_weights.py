import torch


def batched_self_attention_weights(x, W_query, W_key):
    """(T, d_in) -> (T, T), or a batch (B, T, d_in) -> (B, T, T) attention weights."""
    queries, keys = W_query(x), W_key(x)  # (..., T, d_k) each
    scores = queries @ keys.transpose(-2, -1)  # swap only the last two: (..., T, T)
    d_k = keys.shape[-1]  # the size of a key, whatever comes before it
    return torch.softmax(scores / d_k**0.5, dim=-1)
