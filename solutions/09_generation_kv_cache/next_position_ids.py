def next_position_ids(is_token):
    """(B, T) padding mask -> (B, 1): the position of each sequence's next token."""
    # Positions count real tokens only: the next one comes after all of them.
    return is_token.long().sum(dim=-1, keepdim=True)  # (B, 1)
