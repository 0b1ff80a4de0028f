import torch.nn.functional as F


def next_token_loss(logits, ids):
    """logits (B, T, V) computed from ids (B, T) -> the mean cross-entropy of
    predicting each next token (one number)."""
    predictions = logits[:, :-1]  # (B, T - 1, V): the last position has no next token
    targets = ids[:, 1:]  # (B, T - 1): the token after each position
    return F.cross_entropy(predictions.flatten(0, 1), targets.flatten())  # (B*(T-1), V), (B*(T-1),)
