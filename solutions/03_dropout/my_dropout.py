import torch


def my_dropout(weights, p, generator=None):
    """Inverted dropout with torch.rand; generator: an optional torch.Generator."""
    if p == 1:
        return torch.zeros_like(weights)  # nothing is kept, and 1 - p = 0 cannot be divided by
    keep = torch.rand(weights.shape, generator=generator) >= p  # True with probability 1 - p
    return weights * keep / (1 - p)  # a new tensor: weights itself is not changed
