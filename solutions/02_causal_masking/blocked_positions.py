import torch


def blocked_positions(T):
    """(T, T) boolean, True where the key comes after the query."""
    return torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)  # diagonal=1: a token sees itself
