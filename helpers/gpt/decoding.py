"""Generation loops for the tiny GPT (notebook 09) that take any cache and any sampling
setting (``helpers.gpt.sampling``), and what they do at the model's context length.

Letters as in ``helpers.gpt.generation``: B batch, T tokens, V vocabulary size, C the
model's ``context_length``.

TinyGPT learns an embedding for each position 0 .. C-1 and has none beyond, so a token
cannot be read at position C (``model.position_embedding`` would raise an IndexError).
A cache cannot slide either: its keys were computed at their positions, and from the
second layer on every key also depends on the tokens before it, so dropping the oldest
token would change every key after it. Two ways on:

- ``generate_cropped``, no cache: each step runs the model on the last C tokens at most,
  at positions 0 .. C-1, as Raschka's chapter 5 does (``idx[:, -context_size:]``).
- ``generate(..., context="recompute")``: when the next token would need position C, a
  fresh cache reads the last ``window`` tokens again from position 0, and generation
  goes on from there. With ``window=C`` (the default) every step past the limit is such
  a prefill of the last C tokens: ``generate_cropped``'s step exactly, and no cheaper. A
  smaller window restarts once every C - window + 1 steps and uses the cache in between,
  but its steps see from window to C tokens, fewer than ``generate_cropped``'s C: other
  logits, maybe another text (tests/gpt/test_decoding.py measures both).

``context="stop"`` refuses, before any work, to write more than the positions allow. The
last token written is never read, so a prompt of T tokens may get up to C - T + 1 new ones.
"""

import torch

from helpers.gpt.checks import check_token_ids
from helpers.gpt.generation import KVCache, forward_with_cache
from helpers.gpt.model import TinyGPT
from helpers.gpt.sampling import check_generator, check_sampling, choose_next_token
from helpers.validation import check_positive_int

CONTEXT_CHOICES = ("recompute", "stop")


@torch.no_grad()
def generate(model, ids, new_tokens: int, *, cache_factory=KVCache, temperature=0.0,
             top_k=None, top_p=None, generator=None, context="recompute", window=None):
    """Continue ids (B, T) by ``new_tokens`` tokens with a cache that ``cache_factory()``
    builds (anything with ``append(layer, keys, values)`` and ``len``), each token chosen
    by ``choose_next_token`` (greedy at temperature 0). When the next token would need a
    position past the model's last, ``context="recompute"`` starts a fresh cache from the
    last ``window`` tokens (by default context_length: then each such step is
    ``generate_cropped``'s), and ``context="stop"`` refuses before the first step.
    Returns ids (B, T + new_tokens) and the logits each new token was chosen from,
    (B, new_tokens, V)."""
    window = check_decoding(model, ids, new_tokens, temperature, top_k, top_p, generator,
                            context, window, cache_factory)
    cache = cache_factory()
    unread = ids  # (B, T_new): tokens the model has not read yet, the prompt first
    chosen_from = []
    for _ in range(new_tokens):
        if len(cache) + unread.shape[1] > model.context_length:  # a position past the last
            cache = cache_factory()  # start again: the last `window` tokens from position 0
            unread = ids[:, -window:]  # (B, window)
        logits, _ = forward_with_cache(model, unread, cache)  # (B, T_new, V)
        logits = logits[:, -1]  # (B, V): the newest token's scores for the next one
        unread = choose_next_token(logits, temperature=temperature, top_k=top_k,
                                   top_p=top_p, generator=generator)  # (B, 1)
        ids = torch.cat([ids, unread], dim=1)  # (B, T + 1)
        chosen_from.append(logits)
    return ids, torch.stack(chosen_from, dim=1)  # (B, T + new), (B, new, V)


@torch.no_grad()
def generate_cropped(model, ids, new_tokens: int, *, temperature=0.0, top_k=None,
                     top_p=None, generator=None):
    """No cache: every step runs the model on the last context_length tokens at most.
    Takes ``generate``'s arguments but the cache's and returns what it returns; with the
    default window, ``generate`` writes the same tokens."""
    check_decoding(model, ids, new_tokens, temperature, top_k, top_p, generator)
    chosen_from = []
    for _ in range(new_tokens):
        logits = model(ids[:, -model.context_length:])[:, -1]  # (B, V)
        next_id = choose_next_token(logits, temperature=temperature, top_k=top_k,
                                    top_p=top_p, generator=generator)  # (B, 1)
        ids = torch.cat([ids, next_id], dim=1)  # (B, T + 1)
        chosen_from.append(logits)
    return ids, torch.stack(chosen_from, dim=1)  # (B, T + new), (B, new, V)


# ---------------------------------------------------------------- input checks


def check_decoding(model, ids, new_tokens, temperature, top_k, top_p, generator,
                   context="recompute", window=None, cache_factory=KVCache) -> int:
    """Everything checked before the first step; returns the window (an int)."""
    if not isinstance(model, TinyGPT):
        raise TypeError(f"model must be a TinyGPT (helpers.gpt.model), got "
                        f"{type(model).__name__}")
    check_token_ids(ids, model, any_length=True)
    check_positive_int(new_tokens, "new_tokens")
    check_sampling(temperature, top_k, top_p)
    if temperature != 0:
        check_generator(generator, temperature)
    if not callable(cache_factory):
        raise TypeError(f"cache_factory must be something to call for a new, empty cache, "
                        f"such as KVCache, got {type(cache_factory).__name__}")
    if context not in CONTEXT_CHOICES:
        raise ValueError(f"context must be one of {CONTEXT_CHOICES}, got {context!r}")
    C, T = model.context_length, ids.shape[1]
    if context == "stop" and T > C:
        raise ValueError(f"the prompt has T={T} tokens, more than the model's "
                         f"context_length={C}: shorten it, or use context='recompute'")
    if context == "stop" and T + new_tokens - 1 > C:
        raise ValueError(
            f"a prompt of T={T} tokens and new_tokens={new_tokens} would read "
            f"{T + new_tokens - 1} positions (the last token written is not read), but the "
            f"model has position embeddings for context_length={C}: ask for at most "
            f"{C - T + 1} new tokens, or use context='recompute'")
    if window is None:
        return C
    check_positive_int(window, "window")
    if window > C:
        raise ValueError(f"window must be at most the model's context_length={C}: the "
                         f"tokens a fresh cache reads from position 0, got {window}")
    return window
