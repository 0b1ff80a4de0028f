def split_heads(x, num_heads):
    """(B, T, d_out) -> (B, H, T, head_dim)."""
    B, T, d_out = x.shape
    head_dim = d_out // num_heads
    return x.view(B, T, num_heads, head_dim).transpose(1, 2)  # tokens first, then move H
