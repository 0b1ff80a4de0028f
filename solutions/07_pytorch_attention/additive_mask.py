import torch


def additive_mask(allowed, dtype):
    """Boolean mask, True = may attend (any shape) -> float mask of dtype, same shape."""
    lowest = torch.finfo(dtype).min  # finite: a row with no allowed key stays finite
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)  # a new tensor
    return mask.masked_fill(~allowed, lowest)  # 0.0 where allowed; allowed is left as it was
