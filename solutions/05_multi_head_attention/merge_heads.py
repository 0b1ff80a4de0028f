def merge_heads(context):
    """(B, H, T, head_dim) -> (B, T, H * head_dim)."""
    B, H, T, head_dim = context.shape
    # transpose makes the memory out of order for view: contiguous() copies it in order.
    return context.transpose(1, 2).contiguous().view(B, T, H * head_dim)
