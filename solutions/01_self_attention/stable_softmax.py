import torch


def stable_softmax(scores):
    """Softmax along the last dimension, safe for large scores."""
    shifted = scores - scores.max(dim=-1, keepdim=True).values  # every exponent <= 0
    exponentials = torch.exp(shifted)
    return exponentials / exponentials.sum(dim=-1, keepdim=True)
