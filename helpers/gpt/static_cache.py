"""A KV cache allocated once at its full length (notebook 09), beside ``KVCache``'s
growing one (``helpers.gpt.generation``).

``KVCache.append`` grows each layer's tensors with ``torch.cat``, which allocates new ones
and copies every cached key and value into them: the step at T tokens copies T tokens'
keys and values in every layer. ``StaticKVCache`` allocates keys and values of
``max_tokens`` tokens once, writes each new token's into the next free slots, and hands
attention views of the part filled so far: nothing cached is copied again, and the
memory is taken up front (``nbytes``), used or not. Hugging Face transformers has one by
the name ``StaticCache``. ``benchmarks/cache_growth.py`` times both.

Letters as in ``helpers.gpt.generation``: L layers, B batch, H heads, head_dim.
"""

import torch

from helpers.validation import check_positive_int, check_tensor, shape_text


class StaticKVCache:
    """The keys and values of up to ``max_tokens`` tokens in every layer, in two tensors
    (L, B, H, max_tokens, head_dim) allocated at once. Works wherever a KVCache does."""

    def __init__(self, num_layers: int, batch_size: int, num_heads: int, max_tokens: int,
                 head_dim: int, dtype=torch.float32, device="cpu"):
        check_sizes(num_layers, batch_size, num_heads, max_tokens, head_dim)
        shape = (num_layers, batch_size, num_heads, max_tokens, head_dim)
        self.keys = torch.zeros(shape, dtype=dtype, device=device)  # (L, B, H, max, head_dim)
        self.values = torch.zeros(shape, dtype=dtype, device=device)  # (L, B, H, max, head_dim)
        self.lengths = [0] * num_layers  # tokens written so far, per layer

    @classmethod
    def for_model(cls, model, batch_size: int, max_tokens=None):
        """A cache with the sizes, dtype and device of a TinyGPT's layers, for up to
        ``max_tokens`` tokens (by default the model's context_length)."""
        attention = model.blocks[0].attention
        weight = attention.W_key.weight
        max_tokens = model.context_length if max_tokens is None else max_tokens
        return cls(len(model.blocks), batch_size, attention.num_heads, max_tokens,
                   attention.head_dim, dtype=weight.dtype, device=weight.device)

    def append(self, layer: int, keys, values):
        """Write the new tokens' keys and values (B, H, T_new, head_dim) into the next free
        slots of ``layer``; return views of all of them, (B, H, T_cache + T_new, head_dim)."""
        check_append(self, layer, keys, values)
        start = self.lengths[layer]
        end = start + keys.shape[2]
        self.keys[layer, :, :, start:end] = keys  # in place: the cached ones stay put
        self.values[layer, :, :, start:end] = values
        self.lengths[layer] = end
        return self.keys[layer, :, :, :end], self.values[layer, :, :, :end]  # views, no copy

    def __len__(self) -> int:
        """T: how many tokens are cached."""
        return self.lengths[0]

    @property
    def nbytes(self) -> int:
        """The memory allocated for keys and values, in bytes, filled or not."""
        return self.keys.nbytes + self.values.nbytes


# ---------------------------------------------------------------- input checks


def check_sizes(num_layers, batch_size, num_heads, max_tokens, head_dim) -> None:
    for value, name in [(num_layers, "num_layers"), (batch_size, "batch_size"),
                        (num_heads, "num_heads"), (max_tokens, "max_tokens"),
                        (head_dim, "head_dim")]:
        check_positive_int(value, name)


def check_append(cache: StaticKVCache, layer, keys, values) -> None:
    """``layer`` one of the cache's; keys and values (B, H, T_new, head_dim) of its sizes
    and dtype; room for T_new more tokens."""
    L, B, H, max_tokens, head_dim = cache.keys.shape
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < L:
        raise ValueError(f"layer must be an int from 0 to {L - 1} (the cache has num_layers="
                         f"{L}), got {layer!r}")
    for tensor, name in [(keys, "keys"), (values, "values")]:
        check_tensor(tensor, name, ndim=4)
        if tensor.shape[:2] != (B, H) or tensor.shape[3] != head_dim:
            raise ValueError(f"{name} must be (B, H, T_new, head_dim) = ({B}, {H}, T_new, "
                             f"{head_dim}) for this cache, got {shape_text(tensor)}")
        if tensor.dtype != cache.keys.dtype:
            raise TypeError(f"{name} must have the cache's dtype {cache.keys.dtype}, got "
                            f"{tensor.dtype}")
    if values.shape != keys.shape:
        raise ValueError(f"keys and values must have one shape, got {shape_text(keys)} and "
                         f"{shape_text(values)}")
    T_new, filled = keys.shape[2], cache.lengths[layer]
    if filled + T_new > max_tokens:
        raise ValueError(
            f"the cache is full: layer {layer} holds {filled} of max_tokens={max_tokens} "
            f"tokens, and {T_new} more do not fit; build it with a larger max_tokens "
            f"(generate(..., context='recompute') starts a fresh cache at the model's "
            f"context length)")
