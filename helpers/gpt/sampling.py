"""Choosing the next token from the model's logits (notebook 09): greedy, or a draw from
the probabilities that temperature, top-k and top-p reshape.

Letters: V vocabulary size; ``...`` any leading dimensions (B, or B and T).

The three settings act in the order in which Hugging Face transformers applies its
``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper``: divide the
logits by the temperature, keep the ``top_k`` likeliest tokens, then keep the smallest
set of those whose probability reaches ``top_p`` (the "nucleus"), and renormalise. One
difference: tokens with equal logits are ranked by id, the lower first, so ``top_k=1``
keeps exactly the token ``argmax`` picks (transformers keeps every token tied with the
k-th).

Draws come from a ``torch.Generator`` that the caller seeds, never from PyTorch's global
one: the same seed gives the same tokens, and the learner's other random numbers are
left alone.
"""

import math
import numbers

import torch
from torch.nn import functional as F

from helpers.validation import check_positive_int, check_tensor


def next_token_probabilities(logits, *, temperature=1.0, top_k=None, top_p=None):
    """logits (..., V) -> the probabilities (..., V) the next token is drawn from,
    0 where top_k and top_p leave a token out; temperature=0: all on the top one."""
    check_logits(logits)
    check_sampling(temperature, top_k, top_p)
    if temperature == 0:  # what a falling temperature tends to
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    # 1) rank the tokens, likeliest first; equal logits keep the order of their ids
    order = logits.argsort(dim=-1, descending=True, stable=True)  # (..., V): ids
    ranked = logits.gather(-1, order)  # (..., V): the logits, largest first
    # 2) temperature; the largest subtracted first, so a tiny one cannot overflow
    scaled = (ranked - ranked[..., :1]) / temperature  # (..., V)
    keep = torch.ones_like(scaled, dtype=torch.bool)  # (..., V): True = rank kept
    if top_k is not None:  # 3) top-k: the first top_k ranks
        keep[..., top_k:] = False
    # 4) top-p: keep a rank while the kept tokens above it hold less than top_p
    if top_p is not None and top_p < 1:  # top_p=1 keeps all, even what rounds to 0
        kept = torch.softmax(scaled.masked_fill(~keep, -math.inf), dim=-1)  # (.., V)
        above = kept.cumsum(dim=-1) - kept  # the probability ranked above each token
        keep &= above < top_p  # rank 0 always stays: nothing is above it
    # 5) renormalise over what is kept, then put each probability back at its id
    probabilities = torch.softmax(scaled.masked_fill(~keep, -math.inf), dim=-1)
    return torch.zeros_like(logits).scatter(-1, order, probabilities)  # (..., V)


def choose_next_token(logits, *, temperature=0.0, top_k=None, top_p=None,
                      generator=None):
    """logits (..., V) -> the next token's id (..., 1). temperature=0 (the default):
    the likeliest token, greedy, no randomness. Otherwise one draw from
    ``next_token_probabilities`` with ``generator``, a ``torch.Generator`` of
    yours."""
    check_logits(logits)
    check_sampling(temperature, top_k, top_p)
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)  # (..., 1): greedy
    check_generator(generator, temperature)
    probabilities = next_token_probabilities(logits, temperature=temperature,
                                             top_k=top_k, top_p=top_p)  # (..., V)
    rows = probabilities.reshape(-1, logits.shape[-1])  # (N, V): 2-d for multinomial
    ids = torch.multinomial(rows, 1, generator=generator)  # (N, 1)
    return ids.reshape(*logits.shape[:-1], 1)  # (..., 1)


# ---------------------------------------------------------------- input checks


def check_logits(logits) -> None:
    """A floating-point tensor (..., V), V >= 1, with something to choose in every row:
    no NaN or +inf, and not every logit -inf (a token that can never be chosen)."""
    check_tensor(logits, "logits", min_ndim=1)
    if logits.shape[-1] == 0:
        raise ValueError("logits must hold a score for at least one token in its last "
                         "dimension (V), got V=0")
    if logits.isnan().any() or logits.isposinf().any():
        raise ValueError("logits must not hold NaN or +inf; got some (check the model's "
                         "output before sampling from it)")
    if logits.isneginf().all(dim=-1).any():
        raise ValueError("logits has a row where every score is -inf: no token can be "
                         "chosen there")


def check_sampling(temperature, top_k, top_p) -> None:
    """temperature a finite number >= 0; top_k None or an int >= 1 (above V keeps every
    token); top_p None or a number in (0, 1]."""
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"temperature must be a number >= 0 (0 chooses the likeliest token), "
                        f"got {type(temperature).__name__}")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0 (0 chooses the likeliest "
                         f"token, 1 leaves the probabilities as they are), got {temperature}")
    if top_k is not None:
        check_positive_int(top_k, "top_k")
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real):
            raise TypeError(f"top_p must be a number in (0, 1] or None, got "
                            f"{type(top_p).__name__}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1]: the share of probability to keep "
                             f"(1 keeps every token), got {top_p}")


def check_generator(generator, temperature) -> None:
    """Sampling needs a torch.Generator of the caller's own."""
    if generator is None:
        raise ValueError(
            f"sampling at temperature={temperature} needs generator=, a torch.Generator "
            f"you seed, e.g. torch.Generator().manual_seed(0): your own generator makes "
            f"the draws reproducible and leaves PyTorch's global one alone "
            f"(temperature=0 chooses the likeliest token and needs none)")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, e.g. "
                        f"torch.Generator().manual_seed(0), got {type(generator).__name__}")
