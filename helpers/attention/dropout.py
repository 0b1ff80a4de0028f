"""Dropout on attention weights, spelled out (notebook 3)."""

import torch

from helpers.validation import (
    check_probability,
    check_tensor,
)


def attention_dropout(weights: torch.Tensor, p: float, *, generator=None):
    """Dropout as applied to attention weights in training; returns ``(dropped, keep_mask)``.

    Each entry of ``weights`` (any shape, typically (..., T_q, T_k)) is kept with
    probability 1 - p and set to 0 otherwise; the kept entries are multiplied by
    1 / (1 - p), so that the *expected* value of every entry is the entry itself.

    - ``dropped``: same shape and dtype as ``weights``.
    - ``keep_mask``: boolean, same shape, True where the entry was kept.

    ``generator`` (a ``torch.Generator``) makes the draw independent of the global seed.
    Without one, the global generator is used, and on the CPU the result is exactly that of
    ``torch.nn.functional.dropout(weights, p, training=True)`` after the same
    ``torch.manual_seed``. Like PyTorch: p = 0 draws nothing and changes nothing; p = 1
    drops everything (the output is all zeros, there is nothing left to rescale).
    ``weights`` itself is never modified.
    """
    check_tensor(weights, "weights", min_ndim=1)
    p = check_probability(p, "p")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if p == 0.0:
        return weights.clone(), torch.ones_like(weights, dtype=torch.bool)
    # One coin per entry: 1 (keep) with probability 1 - p, as torch's dropout draws it.
    keep = torch.empty_like(weights, requires_grad=False).bernoulli_(1.0 - p, generator=generator)
    # Scale the 0/1 coins first, then multiply: the same rounding as torch's dropout.
    scale = keep if p == 1.0 else keep / (1.0 - p)
    return weights * scale, keep.bool()
