"""Input checks for the tiny GPT: an error that names the argument, what it got and what
was expected, instead of an IndexError from deep inside an embedding."""

import torch

from helpers.validation import shape_text


def check_token_ids(ids, model, *, name: str = "ids", any_length: bool = False) -> torch.Tensor:
    """``ids`` must be a (B, T) tensor of whole numbers from 0 to model.vocab_size - 1,
    with 1 <= T <= model.context_length (any T >= 1 with ``any_length``). Returned as is."""
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"{name} must hold token ids (integers, e.g. torch.long), got {ids.dtype}")
    if ids.ndim != 2:
        hint = f"; for one sequence use {name}.unsqueeze(0)" if ids.ndim == 1 else ""
        raise ValueError(f"{name} must have 2 dimensions (B, T), got shape {shape_text(ids)}"
                         f"{hint}")
    T = ids.shape[1]
    if T == 0:
        raise ValueError(f"{name} must hold at least one token per sequence, got shape "
                         f"{shape_text(ids)}")
    if not any_length and T > model.context_length:
        raise ValueError(f"{name} has T={T} tokens but the model was built for "
                         f"context_length={model.context_length}; shorten the sequence")
    if ids.numel() and (ids.min() < 0 or ids.max() >= model.vocab_size):
        bad = ids.min() if ids.min() < 0 else ids.max()
        raise ValueError(f"{name} must be token ids from 0 to vocab_size - 1 = "
                         f"{model.vocab_size - 1}, got {int(bad)}")
    return ids
