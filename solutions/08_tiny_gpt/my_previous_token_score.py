def my_previous_token_score(weights):
    """Attention weights (B, H, T, T) -> (H,): each head's mean weight on the token
    just before each query."""
    just_before = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1): [..., i, i - 1]
    return just_before.mean(dim=(0, 2))  # (H,)
