import torch


def safe_masked_softmax(scores, allowed):
    """(..., T_q, T_k) -> attention weights (..., T_q, T_k); rows with no allowed key are 0."""
    no_key = ~allowed.any(dim=-1, keepdim=True)  # (..., T_q, 1): rows with nothing allowed
    masked = scores.masked_fill(~allowed, float("-inf"))
    masked = masked.masked_fill(no_key, 0.0)  # finite scores there: no 0/0, no NaN gradient
    return torch.softmax(masked, dim=-1).masked_fill(no_key, 0.0)
