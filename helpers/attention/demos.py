"""Demonstrations: what the notebooks and their explorers compute to show a point, kept
apart from the functions with PyTorch's semantics (``core``, ``masking``, ``dropout``).

- ``projected_attention_weights`` (notebook 1): weights from random projections of any
  width, scaled or not, to show why scores are divided by sqrt(d_k);
- ``running_mean`` (notebook 3): the average of the first n dropout samples, for every n;
- ``head_split_problem`` and ``multi_head_weights`` (notebook 5): whether d_out can be
  shared among the heads, and every head's weights of a freshly built layer;
- ``padded_causal_weights`` (notebook 6): a padded batch's weights built the right way or
  one of the wrong ones.
"""

import torch

from helpers.attention.core import attention_weights, causal_mask
from helpers.attention.masking import check_padding_mask
from helpers.attention.modules import MultiHeadAttention
from helpers.seeding import seeded
from helpers.validation import (
    check_positive_int,
    check_positive_number,
    check_tensor,
    shape_text,
)

MAX_PROJECTION_WIDTH = 1024


def projected_attention_weights(x: torch.Tensor, d_k: int, *, scaled: bool = True,
                                seed: int = 0) -> torch.Tensor:
    """Weights (T, T) from random query/key projections of width ``d_k``.

    x (T, d_in) is projected by standard-normal matrices (d_in, d_k). They are the first
    d_k columns of one pair of (d_in, MAX_PROJECTION_WIDTH) matrices drawn from their own
    generator: the result depends only on the arguments (not on the global seed), and a
    wider d_k adds columns to a narrower one rather than drawing anew. Without scaling the
    scores grow like sqrt(d_k) and the softmax heads for a one-hot choice; dividing by
    sqrt(d_k) keeps it spread out.
    """
    check_tensor(x, "x", ndim=2)
    check_positive_int(d_k, "d_k")
    if d_k > MAX_PROJECTION_WIDTH:
        raise ValueError(f"d_k must be at most {MAX_PROJECTION_WIDTH}, got {d_k}")
    generator = torch.Generator().manual_seed(seed)
    d_in = x.shape[-1]
    W_query = torch.randn(d_in, MAX_PROJECTION_WIDTH, generator=generator, dtype=x.dtype)
    W_key = torch.randn(d_in, MAX_PROJECTION_WIDTH, generator=generator, dtype=x.dtype)
    queries, keys = x @ W_query[:, :d_k], x @ W_key[:, :d_k]  # (T, d_k) each
    return attention_weights(queries, keys, scale=None if scaled else 1.0)


def running_mean(samples: torch.Tensor) -> torch.Tensor:
    """Mean of the first n samples, for every n: (N, ...) -> (N, ...).

    Entry n - 1 of the result is ``samples[:n].mean(dim=0)``; the last entry is the mean
    of all N samples. Used to watch an average of dropout samples settle down.
    """
    check_tensor(samples, "samples", min_ndim=1)
    if samples.shape[0] == 0:
        raise ValueError("samples must hold at least one sample along dimension 0, got shape "
                         f"{shape_text(samples)}")
    counts = torch.arange(1, samples.shape[0] + 1, dtype=samples.dtype, device=samples.device)
    counts = counts.reshape(-1, *([1] * (samples.ndim - 1)))  # (N, 1, ..., 1)
    return samples.cumsum(dim=0) / counts


def head_split_problem(d_out: int, num_heads: int):
    """Why ``d_out`` cannot be shared among ``num_heads`` heads, or None when it can.

    The answer is written for a learner moving sliders: what does not fit, and which
    values would.
    """
    check_positive_int(d_out, "d_out")
    check_positive_int(num_heads, "num_heads")
    if d_out % num_heads == 0:
        return None
    smaller = d_out - d_out % num_heads
    larger = smaller + num_heads
    choices = f"{smaller} or {larger}" if smaller > 0 else f"{larger}"
    return (
        f"d_out = {d_out} features cannot be shared equally among {num_heads} heads "
        f"({d_out} / {num_heads} is not a whole number). Every head needs the same "
        f"head_dim = d_out / num_heads: pick d_out = {choices}, or another number of heads."
    )


def multi_head_weights(x: torch.Tensor, d_out: int, num_heads: int, *, seed: int = 0,
                       weight_std=None) -> torch.Tensor:
    """Causal attention weights (H, T, T) of every head of a freshly built MultiHeadAttention.

    x is one sequence (T, d_in). The module is built at ``seed`` inside
    ``helpers.seeding.seeded``, so the result depends only on the arguments and the global
    random state is left as it was. With ``weight_std`` the query and key weights are
    redrawn from a normal distribution of that spread: PyTorch's default initialisation
    gives nearly uniform weights on the small running example, and larger weights (as
    training tends to produce) make the heads' differences visible. Raises ValueError with
    a plain-words message when d_out is not a multiple of num_heads.
    """
    check_tensor(x, "x", ndim=2)
    problem = head_split_problem(d_out, num_heads)
    if problem:
        raise ValueError(problem)
    T, d_in = x.shape
    with seeded(seed):
        module = MultiHeadAttention(d_in, d_out, context_length=T, dropout=0.0,
                                    num_heads=num_heads)
        if weight_std is not None:
            std = check_positive_number(weight_std, "weight_std")
            with torch.no_grad():
                module.W_query.weight.normal_(0.0, std)
                module.W_key.weight.normal_(0.0, std)
    with torch.no_grad():
        _, weights = module.eval()(x.unsqueeze(0), return_weights=True)  # (1, H, T, T)
    return weights[0]


PADDING_MASKED = ("keys", "queries")


FULLY_MASKED_ROWS = ("nan", "zeros", "uniform")


def padded_causal_weights(scores: torch.Tensor, is_token: torch.Tensor, *, masked: str = "keys",
                          fully_masked: str = "zeros"):
    """Causal attention weights of a padded batch, built one of several ways.

    scores (B, T, T); is_token (B, T), True at real tokens. Returns ``(allowed, weights)``,
    both (B, T, T); ``allowed`` is True where a query may attend.

    - ``masked="keys"`` hides padded keys (columns), the right way; ``"queries"`` hides
      padded queries (rows) instead, the mistake that leaves real tokens reading padding.
    - ``fully_masked`` says what a row with no allowed key becomes: ``"nan"``, a plain
      softmax of nothing but -inf; ``"zeros"``, weights 0, the NaN never formed (the
      helpers' choice); ``"uniform"``, a finite fill (``finfo.min``) instead of -inf,
      which spreads the row evenly over every key.
    """
    check_tensor(scores, "scores", ndim=3)
    B, T, T_k = scores.shape
    if T != T_k:
        raise ValueError(f"scores must be square self-attention scores (B, T, T), got "
                         f"{shape_text(scores)}")
    check_padding_mask(is_token, B, T)
    if masked not in PADDING_MASKED:
        raise ValueError(f"masked must be 'keys' or 'queries', got {masked!r}")
    if fully_masked not in FULLY_MASKED_ROWS:
        raise ValueError(f"fully_masked must be 'nan', 'zeros' or 'uniform', got {fully_masked!r}")
    if masked == "keys":
        padding = is_token[:, None, :]  # (B, 1, T): one row, broadcast over the queries
    else:
        padding = is_token[:, :, None]  # (B, T, 1): one column, broadcast over the keys
    allowed = causal_mask(T, device=scores.device) & padding  # (B, T, T)
    if fully_masked == "uniform":
        fill = torch.finfo(scores.dtype).min
        return allowed, torch.softmax(scores.masked_fill(~allowed, fill), dim=-1)
    blocked = scores.masked_fill(~allowed, float("-inf"))  # (B, T, T)
    if fully_masked == "zeros":  # the NaN never forms: finite scores in an empty row, then 0
        no_key = ~allowed.any(dim=-1, keepdim=True)  # (B, T, 1)
        weights = torch.softmax(blocked.masked_fill(no_key, 0.0), dim=-1)
        return allowed, weights.masked_fill(no_key, 0.0)
    return allowed, torch.softmax(blocked, dim=-1)
