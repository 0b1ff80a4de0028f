import torch.nn.functional as F


def masked_loss(logits, targets, is_token):
    """Mean cross-entropy over the positions where is_token is True."""
    # Selecting the real positions drops padding before it can reach the loss, NaN included.
    return F.cross_entropy(logits[is_token], targets[is_token])  # (N, V) and (N,)
