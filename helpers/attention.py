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


def _check_features(x, d_in: int) -> torch.Tensor:
    check_tensor(x, "x", ndim=(2, 3))
    if x.shape[-1] != d_in:
        raise ValueError(
            f"x must have d_in={d_in} features in its last dimension, got shape {shape_text(x)} "
            "(expected (T, d_in) or (B, T, d_in))"
        )
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
        _check_features(x, self.d_in)
        queries = self.W_query(x)  # (..., T, d_out)
        keys = self.W_key(x)  # (..., T, d_out)
        values = self.W_value(x)  # (..., T, d_out)
        context, weights = scaled_dot_product_attention(queries, keys, values)
        return (context, weights) if return_weights else context


def projected_attention_weights(x: torch.Tensor, d_k: int, *, scaled: bool = True,
                                seed: int = 0) -> torch.Tensor:
    """Weights (T, T) from random query/key projections of width ``d_k``.

    The projections have standard-normal entries drawn from their own generator, so the
    result depends only on the arguments, not on the global seed. Without scaling, the
    scores grow like sqrt(d_k) and the softmax turns into a one-hot choice; dividing by
    sqrt(d_k) keeps it spread out.
    """
    check_tensor(x, "x", ndim=2)
    check_positive_int(d_k, "d_k")
    generator = torch.Generator().manual_seed(seed)
    d_in = x.shape[-1]
    W_query = torch.randn(d_in, d_k, generator=generator, dtype=x.dtype)
    W_key = torch.randn(d_in, d_k, generator=generator, dtype=x.dtype)
    scale = None if scaled else 1.0
    return attention_weights(x @ W_query, x @ W_key, scale=scale)


# ---------------------------------------------------------------- attention modules


def _check_sequence(x, d_in: int, context_length: int) -> torch.Tensor:
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

    def forward(self, x: torch.Tensor, return_weights: bool = False):
        _check_sequence(x, self.d_in, self.context_length)
        T = x.shape[1]
        queries = self.W_query(x)  # (B, T, d_out)
        keys = self.W_key(x)  # (B, T, d_out)
        values = self.W_value(x)  # (B, T, d_out)
        weights = attention_weights(queries, keys, attn_mask=self.causal_mask[:T, :T])  # (B, T, T)
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([head(x) for head in self.heads], dim=-1)


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

    def forward(self, x: torch.Tensor, return_weights: bool = False):
        _check_sequence(x, self.d_in, self.context_length)
        B, T, _ = x.shape
        queries = self._split_heads(self.W_query(x))  # (B, H, T, head_dim)
        keys = self._split_heads(self.W_key(x))  # (B, H, T, head_dim)
        values = self._split_heads(self.W_value(x))  # (B, H, T, head_dim)
        weights = attention_weights(queries, keys, attn_mask=self.causal_mask[:T, :T])
        weights = self.dropout(weights)  # (B, H, T, T)
        context = weights @ values  # (B, H, T, T) @ (B, H, T, head_dim) -> (B, H, T, head_dim)
        context = context.transpose(1, 2)  # (B, T, H, head_dim)
        context = context.contiguous().view(B, T, self.d_out)  # (B, T, d_out): heads side by side
        output = self.out_proj(context)  # (B, T, d_out)
        return (output, weights) if return_weights else output


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
