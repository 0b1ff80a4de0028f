import math

import torch


def attend_over_cache(query, cached_keys, cached_values, new_key, new_value):
    """The new token's output (B, H, 1, head_dim), attending over the cache and itself."""
    keys = torch.cat([cached_keys, new_key], dim=2)  # (B, H, T + 1, head_dim)
    values = torch.cat([cached_values, new_value], dim=2)  # (B, H, T + 1, head_dim)
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (B, H, 1, T + 1)
    weights = torch.softmax(scores, dim=-1)  # every key is in the past: no mask
    # (B, H, 1, T + 1) @ (B, H, T + 1, head_dim) -> (B, H, 1, head_dim)
    return weights @ values
