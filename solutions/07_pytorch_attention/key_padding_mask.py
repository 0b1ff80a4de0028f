import torch


def key_padding_mask(lengths, T, side):
    """(B, T) boolean key_padding_mask for nn.MultiheadAttention: True at padding."""
    positions = torch.arange(T)  # (T,)
    counts = torch.as_tensor(lengths).reshape(-1, 1)  # (B, 1), from a list or a tensor
    if side == "right":
        is_token = positions < counts  # (B, T): tokens first, then padding
    else:
        is_token = positions >= T - counts  # (B, T): padding first, then tokens
    return ~is_token  # True = padding, the keys to ignore
