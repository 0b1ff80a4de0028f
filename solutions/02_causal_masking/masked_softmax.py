import torch


def masked_softmax(scores, mask):
    """Softmax of each row over the keys where mask is True (True = may attend)."""
    blocked = scores.masked_fill(~mask, float("-inf"))  # masked_fill wants True = blocked
    return torch.softmax(blocked, dim=-1)
