"""Reference attention maths, written to be read.

Every function here has the semantics of its PyTorch counterpart and is tested against
it (``tests/test_attention.py``). Shapes use the course's letters: B batch, H heads,
T tokens, d_in and d_out features, d_k the size of a query/key vector.

Mask convention, as in ``torch.nn.functional.scaled_dot_product_attention``:
a boolean mask is True where a query **may attend** to a key; a float mask is **added**
to the scores (0 keeps a score, -inf removes it).
"""

import math

import torch
from torch import nn

from helpers.validation import (
    check_positive_int,
    check_positive_number,
    check_probability,
    check_tensor,
    shape_text,
)


def causal_mask(T: int, *, device=None) -> torch.Tensor:
    """Boolean (T, T) mask, True where query i may attend to key j, i.e. j <= i.

    >>> causal_mask(3).int()
    tensor([[1, 0, 0],
            [1, 1, 0],
            [1, 1, 1]], dtype=torch.int32)
    """
    check_positive_int(T, "T")
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def _check_mask(attn_mask, scores_shape: torch.Size) -> torch.Tensor:
    check_tensor(attn_mask, "attn_mask", min_ndim=2, floating=False)
    if not (attn_mask.dtype == torch.bool or attn_mask.is_floating_point()):
        raise TypeError(
            "attn_mask must be a boolean tensor (True = may attend) or a float tensor "
            f"(added to the scores), got {attn_mask.dtype}"
        )
    try:
        broadcast = torch.broadcast_shapes(attn_mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores_shape:
        raise ValueError(
            f"attn_mask of shape {shape_text(attn_mask)} cannot be broadcast to the "
            f"attention scores, shape ({', '.join(map(str, scores_shape))}) = (..., T_query, T_key)"
        )
    return attn_mask


def attention_scores(query: torch.Tensor, key: torch.Tensor, scale=None) -> torch.Tensor:
    """Scaled dot products of every query with every key.

    query (..., T_q, d_k) and key (..., T_k, d_k) give scores (..., T_q, T_k), multiplied
    by ``scale`` (default 1 / sqrt(d_k)).
    """
    check_tensor(query, "query", min_ndim=2)
    check_tensor(key, "key", min_ndim=2)
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            "query and key must have the same size in their last dimension (d_k), got "
            f"query {shape_text(query)} and key {shape_text(key)}"
        )
    if query.dtype != key.dtype:
        raise TypeError(
            f"query and key must have the same dtype, got {query.dtype} and {key.dtype}")
    try:
        torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "query and key must have matching (or broadcastable) leading dimensions, got "
            f"query {shape_text(query)} and key {shape_text(key)}"
        ) from None
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    else:
        scale = check_positive_number(scale, "scale")
    # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    return (query @ key.transpose(-2, -1)) * scale


def attention_weights(
    query: torch.Tensor, key: torch.Tensor, attn_mask=None, is_causal=False, scale=None
) -> torch.Tensor:
    """Softmax of the masked, scaled scores: weights (..., T_q, T_k), each row summing to 1.

    A row in which every key is masked has no key to attend to; like PyTorch, its weights
    are all 0 (a plain softmax would give NaN there).
    """
    scores = attention_scores(query, key, scale)
    T_q, T_k = scores.shape[-2:]
    if is_causal and attn_mask is not None:
        raise ValueError("give either attn_mask or is_causal=True, not both (PyTorch refuses both)")
    if is_causal:
        # Top-left aligned, as in PyTorch: query i sees keys 0..i.
        attn_mask = torch.ones(T_q, T_k, dtype=torch.bool, device=scores.device).tril()
    if attn_mask is not None:
        _check_mask(attn_mask, scores.shape)
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.to(scores.dtype)
    fully_masked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill(fully_masked, 0.0)


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale=None,
):
    """Attention written out step by step; returns ``(output, weights)``.

    Same arguments and output as ``torch.nn.functional.scaled_dot_product_attention``,
    which returns only the output:

    - query (..., T_q, d_k), key (..., T_k, d_k), value (..., T_k, d_v)
    - output (..., T_q, d_v), weights (..., T_q, T_k)

    ``dropout_p`` > 0 drops weights at random and scales the kept ones by 1/(1 - p),
    always, as PyTorch's function does (it has no train/eval switch); the weights
    returned are the ones that multiplied ``value``.
    """
    check_tensor(value, "value", min_ndim=2)
    dropout_p = check_probability(dropout_p, "dropout_p")
    weights = attention_weights(query, key, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(
            "key and value must have the same number of tokens (dimension -2), got "
            f"key {shape_text(key)} and value {shape_text(value)}"
        )
    if value.dtype != query.dtype:
        raise TypeError(f"value must have the dtype of query ({query.dtype}), got {value.dtype}")
    try:
        torch.broadcast_shapes(weights.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "value's leading dimensions do not match query's and key's, got "
            f"query {shape_text(query)}, key {shape_text(key)} and value {shape_text(value)}"
        ) from None
    if dropout_p > 0.0:
        weights = nn.functional.dropout(weights, p=dropout_p, training=True)
    # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return weights @ value, weights


def _check_dtype(x: torch.Tensor, module: nn.Module) -> None:
    dtype = next(module.parameters()).dtype
    if x.dtype != dtype:
        raise TypeError(
            f"x must have the dtype of the module's weights ({dtype}), got {x.dtype}; "
            f"convert x with x.to({dtype}) or the module with module.to({x.dtype})"
        )


def _check_features(x, module: nn.Module) -> torch.Tensor:
    """x (T, d_in) or (B, T, d_in), in the dtype of the module's weights."""
    d_in = module.d_in
    check_tensor(x, "x", ndim=(2, 3))
    if x.shape[-1] != d_in:
        raise ValueError(
            f"x must have d_in={d_in} features in its last dimension, got shape {shape_text(x)} "
            "(expected (T, d_in) or (B, T, d_in))"
        )
    _check_dtype(x, module)
    return x


class SelfAttention(nn.Module):
    """Self-attention with trainable query, key and value projections, no mask.

    x (T, d_in) or (B, T, d_in) -> context vectors (T, d_out) or (B, T, d_out).
    The three layers are built in the order W_query, W_key, W_value: with the same seed,
    the same order gives the same initial weights as the reference material.
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.d_in = check_positive_int(d_in, "d_in")
        self.d_out = check_positive_int(d_out, "d_out")
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor, return_weights: bool = False):
        _check_features(x, self)
        queries = self.W_query(x)  # (..., T, d_out)
        keys = self.W_key(x)  # (..., T, d_out)
        values = self.W_value(x)  # (..., T, d_out)
        context, weights = scaled_dot_product_attention(queries, keys, values)
        return (context, weights) if return_weights else context


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


# ---------------------------------------------------------------- padding masks


PADDING_SIDES = ("right", "left")


def padding_mask(lengths, T: int = None, *, side: str = "right") -> torch.Tensor:
    """Boolean (B, T), True at real tokens and False at padding, for sequences of ``lengths``.

    ``side="right"`` puts the padding after each sequence's tokens, ``"left"`` before them.
    ``T`` defaults to the longest length.

    >>> padding_mask([3, 1], side="left").int()
    tensor([[1, 1, 1],
            [0, 0, 1]], dtype=torch.int32)
    """
    if isinstance(lengths, torch.Tensor):
        if lengths.ndim != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
            raise TypeError(f"lengths must be a 1-d integer tensor or a list of ints, got "
                            f"{lengths.dtype} tensor of shape {shape_text(lengths)}")
        lengths = lengths.tolist()
    if not isinstance(lengths, (list, tuple)) or not lengths:
        raise TypeError(f"lengths must be a non-empty list of ints, got {lengths!r}")
    for length in lengths:
        if isinstance(length, bool) or not isinstance(length, int):
            raise TypeError(f"lengths must hold ints, got {type(length).__name__} ({length!r})")
        if length < 0:
            raise ValueError(f"lengths must be at least 0, got {length}")
    T = max(lengths) if T is None else check_positive_int(T, "T")
    if max(lengths) > T:
        raise ValueError(f"a length of {max(lengths)} does not fit in T={T} positions")
    if side not in PADDING_SIDES:
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    positions = torch.arange(T)  # (T,)
    counts = torch.tensor(lengths).unsqueeze(1)  # (B, 1)
    if side == "right":
        return positions < counts  # (B, T): the first `length` positions are tokens
    return positions >= T - counts  # (B, T): the last `length` positions are tokens


def check_padding_mask(is_token, B: int, T: int) -> torch.Tensor:
    """Check a (B, T) boolean padding mask (True = real token); return it unchanged."""
    check_tensor(is_token, "padding_mask", ndim=2, floating=False)
    if is_token.dtype != torch.bool:
        raise TypeError(
            f"padding_mask must be boolean (True = real token), got {is_token.dtype}; "
            "from token ids, build it with input_ids != pad_id"
        )
    if tuple(is_token.shape) != (B, T):
        raise ValueError(
            f"padding_mask must have shape (B, T) = ({B}, {T}), one entry per token of x, "
            f"got {shape_text(is_token)}"
        )
    return is_token


def key_padding_attn_mask(is_token: torch.Tensor) -> torch.Tensor:
    """(B, T) padding mask -> (B, 1, 1, T) attention mask that hides padded **keys**.

    The two 1s broadcast over heads and over queries: every query of a sequence, in every
    head, may attend to that sequence's real tokens and to none of its padding.
    """
    check_tensor(is_token, "padding_mask", ndim=2, floating=False)
    check_padding_mask(is_token, *is_token.shape)
    return is_token[:, None, None, :]  # (B, 1, 1, T)


def causal_padding_attn_mask(is_token: torch.Tensor) -> torch.Tensor:
    """(B, T) padding mask -> (B, 1, T, T): causal **and** not a padded key."""
    check_tensor(is_token, "padding_mask", ndim=2, floating=False)
    T = is_token.shape[-1]
    return causal_mask(T, device=is_token.device) & key_padding_attn_mask(is_token)


# ---------------------------------------------------------------- attention modules


def _check_sequence(x, module: nn.Module) -> torch.Tensor:
    """x (B, T, d_in) with T <= context_length, in the dtype of the module's weights."""
    d_in, context_length = module.d_in, module.context_length
    check_tensor(x, "x", ndim=3)
    B, T, features = x.shape
    if features != d_in:
        raise ValueError(
            f"x must have d_in={d_in} features in its last dimension, got shape {shape_text(x)} "
            "(expected (B, T, d_in))"
        )
    if T > context_length:
        raise ValueError(
            f"x has T={T} tokens but this module was built for context_length={context_length}; "
            "build it with a larger context_length or shorten the sequence"
        )
    _check_dtype(x, module)
    return x


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the weights.

    x (B, T, d_in) -> context vectors (B, T, d_out), with T <= context_length.
    The causal mask is built once for ``context_length`` and kept as a buffer, so it moves
    with the module (``.to(device)``); each forward slices it down to the actual T.
    Layers are built in the order W_query, W_key, W_value, as in the reference material.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float = 0.0,
                 qkv_bias: bool = False):
        super().__init__()
        self.d_in = check_positive_int(d_in, "d_in")
        self.d_out = check_positive_int(d_out, "d_out")
        self.context_length = check_positive_int(context_length, "context_length")
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))
        # Derived from context_length, so not saved in the state dict.
        self.register_buffer("causal_mask", causal_mask(context_length), persistent=False)

    def forward(self, x: torch.Tensor, padding_mask=None, return_weights: bool = False):
        """x (B, T, d_in); padding_mask (B, T), True at real tokens, hides padded keys."""
        _check_sequence(x, self)
        B, T, _ = x.shape
        queries = self.W_query(x)  # (B, T, d_out)
        keys = self.W_key(x)  # (B, T, d_out)
        values = self.W_value(x)  # (B, T, d_out)
        mask = self.causal_mask[:T, :T]  # (T, T)
        if padding_mask is not None:
            mask = mask & check_padding_mask(padding_mask, B, T)[:, None, :]  # (B, T, T)
        weights = attention_weights(queries, keys, attn_mask=mask)  # (B, T, T)
        weights = self.dropout(weights)  # active in train(), off in eval()
        context = weights @ values  # (B, T, T) @ (B, T, d_out) -> (B, T, d_out)
        return (context, weights) if return_weights else context


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent CausalAttention heads, outputs concatenated.

    x (B, T, d_in) -> (B, T, num_heads * d_out). Simple to read, slow to run: each head
    does its own projections and matrix products one after the other.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float,
                 num_heads: int, qkv_bias: bool = False):
        super().__init__()
        check_positive_int(num_heads, "num_heads")
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads))

    def forward(self, x: torch.Tensor, padding_mask=None) -> torch.Tensor:
        return torch.cat([head(x, padding_mask) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    """Causal multi-head attention: project once, split into heads, attend, merge, project.

    x (B, T, d_in) -> (B, T, d_out). Each of the ``num_heads`` heads works on
    head_dim = d_out // num_heads features. Layers are built in the order W_query, W_key,
    W_value, out_proj, as in the reference material.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float,
                 num_heads: int, qkv_bias: bool = False):
        super().__init__()
        self.d_in = check_positive_int(d_in, "d_in")
        self.d_out = check_positive_int(d_out, "d_out")
        self.num_heads = check_positive_int(num_heads, "num_heads")
        self.context_length = check_positive_int(context_length, "context_length")
        if d_out % num_heads != 0:
            raise ValueError(
                f"d_out must be divisible by num_heads so that every head gets the same size, "
                f"got d_out={d_out} and num_heads={num_heads}"
            )
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes what the heads found
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))
        self.register_buffer("causal_mask", causal_mask(context_length), persistent=False)

    def _split_heads(self, projected: torch.Tensor) -> torch.Tensor:
        B, T, _ = projected.shape
        projected = projected.view(B, T, self.num_heads, self.head_dim)  # (B, T, H, head_dim)
        return projected.transpose(1, 2)  # (B, H, T, head_dim)

    def forward(self, x: torch.Tensor, padding_mask=None, return_weights: bool = False):
        """x (B, T, d_in); padding_mask (B, T), True at real tokens, hides padded keys."""
        _check_sequence(x, self)
        B, T, _ = x.shape
        queries = self._split_heads(self.W_query(x))  # (B, H, T, head_dim)
        keys = self._split_heads(self.W_key(x))  # (B, H, T, head_dim)
        values = self._split_heads(self.W_value(x))  # (B, H, T, head_dim)
        mask = self.causal_mask[:T, :T]  # (T, T)
        if padding_mask is not None:
            key_mask = check_padding_mask(padding_mask, B, T)[:, None, None, :]  # (B, 1, 1, T)
            mask = mask & key_mask  # (B, 1, T, T)
        weights = attention_weights(queries, keys, attn_mask=mask)
        weights = self.dropout(weights)  # (B, H, T, T)
        context = weights @ values  # (B, H, T, T) @ (B, H, T, head_dim) -> (B, H, T, head_dim)
        context = context.transpose(1, 2)  # (B, T, H, head_dim)
        context = context.contiguous().view(B, T, self.d_out)  # (B, T, d_out): heads side by side
        output = self.out_proj(context)  # (B, T, d_out)
        return (output, weights) if return_weights else output


# ---------------------------------------------------------------- notebook 02: causal masking
#
# Two ways to keep a query from attending to the keys after it. Both take the scores
# (..., T_q, T_k) and a boolean mask, True where a query may attend (the convention above),
# and return weights (..., T_q, T_k) whose allowed entries in each row sum to 1.


def _check_scores_and_mask(scores, mask) -> torch.Tensor:
    """The boolean mask to use: ``mask`` checked against ``scores``, or the causal one."""
    check_tensor(scores, "scores", min_ndim=2)
    T_q, T_k = scores.shape[-2:]
    if mask is None:
        # Top-left aligned, as torch's is_causal=True: query i sees keys 0..i.
        return causal_mask(max(T_q, T_k), device=scores.device)[:T_q, :T_k]
    check_tensor(mask, "mask", min_ndim=2, floating=False)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be a boolean tensor, True where a query may attend, got {mask.dtype} "
            "(a 0/1 mask from torch.tril becomes one with .bool(); a 0/-inf additive mask "
            "with == 0)"
        )
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores.shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores.shape:
        raise ValueError(
            f"mask of shape {shape_text(mask)} cannot be broadcast to scores of shape "
            f"{shape_text(scores)} = (..., T_query, T_key); a mask built for a longer "
            "context is sliced first: mask[:T_query, :T_key]"
        )
    return mask


def masked_weights_by_renormalising(scores: torch.Tensor, mask=None) -> torch.Tensor:
    """Strategy 1: softmax over every key, zero the blocked weights, rescale each row to sum 1.

    scores (..., T_q, T_k); mask boolean, broadcastable to scores, True where a query may
    attend (default: causal, query i sees keys 0..i). Returns weights (..., T_q, T_k).

    A row with no allowed key gets weights 0, as in ``attention_weights``. A row whose
    allowed weights all underflowed to 0 in the first softmax (a blocked score far above
    the allowed ones) comes out NaN: the weakness of this strategy, shown in notebook 02.
    """
    mask = _check_scores_and_mask(scores, mask)
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k), still attending to the future
    kept = weights.masked_fill(~mask, 0.0)  # the mask says who may attend; ~ gives who may not
    row_sums = kept.sum(dim=-1, keepdim=True)  # (..., T_q, 1), below 1 wherever keys were cut
    weights = kept / row_sums
    no_key = ~mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    return weights.masked_fill(no_key, 0.0)


def masked_weights_by_neg_inf(scores: torch.Tensor, mask=None) -> torch.Tensor:
    """Strategy 2: set the blocked scores to -inf, then one softmax (exp(-inf) = 0).

    scores (..., T_q, T_k); mask boolean, broadcastable to scores, True where a query may
    attend (default: causal, query i sees keys 0..i). Returns weights (..., T_q, T_k).

    A row with no allowed key would be a softmax of nothing but -inf, which is NaN; like
    ``attention_weights`` and PyTorch, its weights are 0 instead.
    """
    mask = _check_scores_and_mask(scores, mask)
    blocked_scores = scores.masked_fill(~mask, float("-inf"))  # masked_fill wants True = blocked
    weights = torch.softmax(blocked_scores, dim=-1)  # (..., T_q, T_k)
    no_key = ~mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    return weights.masked_fill(no_key, 0.0)


# ---------------------------------------------------------------- dropout on attention weights
# Notebook 03. Written out so that a learner can see every step, and checked in
# tests/test_dropout.py against torch.nn.functional.dropout (same seed, same result).


def attention_dropout(weights: torch.Tensor, p: float, *, generator=None):
    """Dropout as applied to attention weights in training; returns ``(dropped, keep_mask)``.

    Each entry of ``weights`` (any shape, typically (..., T_q, T_k)) is kept with
    probability 1 - p and set to 0 otherwise; the kept entries are multiplied by
    1 / (1 - p), so that the *expected* value of every entry is the entry itself.

    - ``dropped``: same shape and dtype as ``weights``.
    - ``keep_mask``: boolean, same shape, True where the entry was kept.

    ``generator`` (a ``torch.Generator``) makes the draw independent of the global seed.
    Without one, the global generator is used, and the result is exactly that of
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


# ---------------------------------------------------------------- notebook 06: padding choices
# The choices notebook 06 compares, side by side, for its explorer and its tests.

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
      softmax of nothing but -inf; ``"zeros"``, weights 0 (PyTorch's and the helpers'
      choice); ``"uniform"``, a finite fill (``finfo.min``) instead of -inf, which spreads
      the row evenly over every key.
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
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)  # (B, T, T)
    if fully_masked == "zeros":
        no_key = ~allowed.any(dim=-1, keepdim=True)  # (B, T, 1)
        weights = weights.masked_fill(no_key, 0.0)
    return allowed, weights


# ---------------------------------------------------------------- notebook 05: multi-head explorer


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

    x is one sequence (T, d_in). The module is built with ``torch.manual_seed(seed)`` inside
    a forked random state, so the result depends only on the arguments and the global
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
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
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
