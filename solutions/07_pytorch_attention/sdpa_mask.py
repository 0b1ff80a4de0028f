def sdpa_mask(blocked):
    """(B, T, T) masked_fill mask, True = blocked -> (B, 1, T, T) attn_mask, True = may attend."""
    allowed = ~blocked  # a new tensor: SDPA's boolean True means "may attend"
    return allowed.unsqueeze(1)  # (B, 1, T, T): a size-1 head axis broadcasts over H heads
