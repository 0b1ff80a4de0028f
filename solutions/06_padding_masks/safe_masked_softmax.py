import torch


def safe_masked_softmax(scores, allowed):
    """(..., T_q, T_k) -> attention weights (..., T_q, T_k); rows with no allowed key are 0."""
    no_key = ~allowed.any(dim=-1, keepdim=True)  # (..., T_q, 1): rows with nothing allowed
    # -inf at blocked keys; the empty rows finite (0): no (-inf) - (-inf), no NaN gradient
    masked = scores.masked_fill(~allowed, float("-inf")).masked_fill(no_key, 0.0)
    return torch.softmax(masked, dim=-1).masked_fill(no_key, 0.0)
