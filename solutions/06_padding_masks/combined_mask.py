import torch


def combined_mask(lengths, T, side):
    """(B, 1, T, T) boolean: causal, and never a padded key."""
    positions = torch.arange(T)  # (T,)
    counts = torch.tensor(lengths)[:, None]  # (B, 1)
    if side == "right":
        is_token = positions < counts  # (B, T): tokens first, then padding
    else:
        is_token = positions >= T - counts  # (B, T): padding first, then tokens
    causal = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
    return causal & is_token[:, None, None, :]  # keys are the last dimension: (B, 1, T, T)
