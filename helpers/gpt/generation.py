"""Generating text with the tiny GPT of notebook 08: a key/value cache built from the
model's own parameters, and batches of left-padded prompts (notebook 09).

Letters as in ``helpers.gpt.model``: B batch, T tokens, V vocabulary size, d_model, H
heads, head_dim = d_model // H, L layers. T_new is the number of tokens fed in one call,
T_k the number of keys they attend over (the cached ones and their own).

``TinyGPT.forward`` takes token ids and nothing else: its positions are always 0 .. T-1
and it has no padding mask. Generation needs both, so ``forward_with_cache`` runs the
model's own submodules itself (its embeddings; each block's norms, attention projections
and MLP; the final norm and the head): no new parameter and no copy. On an empty cache it
gives exactly ``model(ids)``, which tests/gpt/test_generation.py checks.
"""

from dataclasses import dataclass, field

import torch

from helpers.attention import (
    attention_weights,
    causal_mask,
    merge_heads,
    padding_mask,
    position_ids,
    split_heads,
)
from helpers.gpt.checks import check_token_ids
from helpers.gpt.model import TinyGPT
from helpers.validation import check_positive_int, shape_text


@dataclass
class KVCache:
    """The keys and values of every token read so far, one pair per layer:
    ``keys[layer]`` and ``values[layer]`` are (B, H, T, head_dim)."""

    keys: list = field(default_factory=list)
    values: list = field(default_factory=list)

    def append(self, layer: int, keys, values):
        """Add the new tokens' keys and values (B, H, T_new, head_dim) to those of
        ``layer``; return all of them, (B, H, T_cache + T_new, head_dim) each."""
        if layer == len(self.keys):  # the first tokens this layer sees
            self.keys.append(keys)
            self.values.append(values)
        else:  # the token axis is dimension 2
            self.keys[layer] = torch.cat([self.keys[layer], keys], dim=2)
            self.values[layer] = torch.cat([self.values[layer], values], dim=2)
        return self.keys[layer], self.values[layer]

    def __len__(self) -> int:
        """T: how many tokens are cached."""
        return self.keys[0].shape[2] if self.keys else 0

    @property
    def nbytes(self) -> int:
        """The memory the cached tensors hold, in bytes."""
        tensors = [*self.keys, *self.values]
        return sum(tensor.numel() * tensor.element_size() for tensor in tensors)


def new_query_mask(T_new: int, T_k: int, is_token=None):
    """Which keys each of T_new new queries may attend to (True = may attend), or
    None when nothing needs hiding. The new queries are the LAST T_new of T_k tokens,
    so the causal mask is aligned bottom-right: query i sees keys 0 .. T_k-T_new+i.
    ``is_token`` (B, T_k), True at real tokens, hides padded keys too."""
    if T_new == 1 and is_token is None:
        return None  # one new token: every key is in its past, none to hide
    causal = causal_mask(T_k)[T_k - T_new:]  # (T_new, T_k): the last T_new rows
    if is_token is None:
        return causal
    return causal & is_token[:, None, None, :]  # (B, 1, T_new, T_k)


def cached_attention(attention, x, cache: KVCache, layer: int, mask=None):
    """One block's MultiHeadAttention for the new tokens x (B, T_new, d_model): their
    keys and values join the cache, and their queries attend over all of it.
    Returns the output (B, T_new, d_model) and the weights (B, H, T_new, T_k)."""
    H = attention.num_heads
    queries = split_heads(attention.W_query(x), H)  # (B, H, T_new, head_dim)
    keys = split_heads(attention.W_key(x), H)  # (B, H, T_new, head_dim)
    values = split_heads(attention.W_value(x), H)  # (B, H, T_new, head_dim)
    keys, values = cache.append(layer, keys, values)  # (B, H, T_k, head_dim) each
    weights = attention_weights(queries, keys, attn_mask=mask)  # (B, H, T_new, T_k)
    # (B, H, T_new, T_k) @ (B, H, T_k, head_dim) -> (B, H, T_new, head_dim)
    context = merge_heads(weights @ values)  # (B, T_new, d_model)
    return attention.out_proj(context), weights


def forward_with_cache(model, ids, cache: KVCache, positions=None, is_token=None):
    """The model on the new tokens ids (B, T_new) only, every earlier token being in
    ``cache`` (which grows by T_new). ``positions`` (T_new,) or (B, T_new): the new
    tokens' positions, by default those right after the cached ones. ``is_token``
    (B, T_k): True at the real tokens, cached and new (left-padded batches).
    Returns logits (B, T_new, V) and weights (B, L, H, T_new, T_k)."""
    T_new = ids.shape[1]
    T_k = len(cache) + T_new  # the keys: cached, then new
    if positions is None:
        positions = torch.arange(len(cache), T_k)  # (T_new,)
    mask = new_query_mask(T_new, T_k, is_token)  # None or (..., T_new, T_k)
    x = model.token_embedding(ids)  # (B, T_new, d_model)
    x = x + model.position_embedding(positions)  # (B, T_new, d_model)
    weights = []
    for layer, block in enumerate(model.blocks):
        attention = block.attention
        context, w = cached_attention(attention, block.norm1(x), cache, layer, mask)
        x = x + context  # (B, T_new, d_model)
        x = x + block.mlp(block.norm2(x))  # (B, T_new, d_model)
        weights.append(w)  # (B, H, T_new, T_k)
    logits = model.lm_head(model.final_norm(x))  # (B, T_new, V)
    return logits, torch.stack(weights, dim=1)  # (B, L, H, T_new, T_k)


@torch.no_grad()
def generate_without_cache(model, ids, new_tokens: int):
    """Greedy generation as in notebook 08: every step runs the model over the whole
    sequence again. ids (B, T) -> ids (B, T + new_tokens), and the logits each new
    token was chosen from, (B, new_tokens, V)."""
    check_generation(model, ids, new_tokens)
    chosen_from = []
    for _ in range(new_tokens):
        logits = model(ids)[:, -1]  # (B, V): the scores for the next token
        next_id = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
        ids = torch.cat([ids, next_id], dim=1)  # (B, T + 1)
        chosen_from.append(logits)
    return ids, torch.stack(chosen_from, dim=1)  # (B, T + new), (B, new, V)


@torch.no_grad()
def generate_with_cache(model, ids, new_tokens: int):
    """The same greedy generation with a KV cache: the first step reads the whole
    prompt (the "prefill"), every later step only the token chosen last. Returns what
    ``generate_without_cache`` returns."""
    check_generation(model, ids, new_tokens)
    cache = KVCache()
    unread = ids  # (B, T_new): tokens the model has not read yet, the prompt first
    chosen_from = []
    for _ in range(new_tokens):
        logits, _ = forward_with_cache(model, unread, cache)  # (B, T_new, V)
        logits = logits[:, -1]  # (B, V): the newest token's scores for the next one
        unread = logits.argmax(dim=-1, keepdim=True)  # (B, 1): the next token
        ids = torch.cat([ids, unread], dim=1)  # (B, T + 1)
        chosen_from.append(logits)
    return ids, torch.stack(chosen_from, dim=1)  # (B, T + new), (B, new, V)


def left_pad(prompts, pad_id: int = 0):
    """B prompts of different lengths (1-d tensors of token ids) -> ids (B, T),
    padded on the left with ``pad_id``, and is_token (B, T), True at real tokens."""
    check_prompts(prompts)
    lengths = [len(prompt) for prompt in prompts]
    is_token = padding_mask(lengths, side="left")  # (B, T)
    ids = torch.full(is_token.shape, pad_id, dtype=prompts[0].dtype)  # (B, T)
    ids[is_token] = torch.cat(list(prompts))  # row by row, into the real positions
    return ids, is_token


@torch.no_grad()
def generate_batch(model, ids, is_token, new_tokens: int, use_position_ids=True):
    """Greedy generation with the cache for left-padded prompts ids (B, T), is_token
    (B, T) True at real tokens (``left_pad``). Padded keys are hidden, and positions
    count real tokens only (``use_position_ids=False``: columns, as TinyGPT.forward).
    Returns what ``generate_without_cache`` returns."""
    check_batch(model, ids, is_token, new_tokens)
    cache = KVCache()
    unread = ids  # (B, T_new)
    chosen_from = []
    for _ in range(new_tokens):
        T_new = unread.shape[1]
        if use_position_ids:
            positions = position_ids(is_token)[:, -T_new:]  # (B, T_new)
        else:
            positions = torch.arange(is_token.shape[1])[-T_new:]  # (T_new,)
        logits, _ = forward_with_cache(model, unread, cache, positions, is_token)
        logits = logits[:, -1]  # (B, V)
        unread = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
        ids = torch.cat([ids, unread], dim=1)  # (B, T + 1)
        is_new_token = torch.ones_like(unread, dtype=torch.bool)  # (B, 1): real
        is_token = torch.cat([is_token, is_new_token], dim=1)  # (B, T + 1)
        chosen_from.append(logits)
    return ids, torch.stack(chosen_from, dim=1)  # (B, T + new), (B, new, V)


@torch.no_grad()
def generation_trace(model, ids, new_tokens: int) -> dict:
    """What the explorer steps through: greedy generation with the cache from one prompt
    ids (T,), recording at every step the newest token's attention row in every layer
    and head, and the cache's size. Returns {"ids": (T + new_tokens,), "weights": a list
    of new_tokens tensors (L, H, T_k), T_k = T, T + 1, ..., "cache_tokens": list of ints,
    "cache_bytes": list of ints}."""
    if not isinstance(ids, torch.Tensor) or ids.ndim != 1:
        got = shape_text(ids) if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(f"ids must be one prompt, a 1-d tensor of token ids, got {got}")
    check_generation(model, ids[None], new_tokens)
    cache, unread = KVCache(), ids[None]  # (1, T)
    trace = {"ids": ids, "weights": [], "cache_tokens": [], "cache_bytes": []}
    for _ in range(new_tokens):
        logits, weights = forward_with_cache(model, unread, cache)  # weights (1, L, H, T_new, T_k)
        unread = logits[:, -1].argmax(dim=-1, keepdim=True)  # (1, 1)
        trace["ids"] = torch.cat([trace["ids"], unread[0]])
        trace["weights"].append(weights[0, :, :, -1])  # (L, H, T_k): the newest query
        trace["cache_tokens"].append(len(cache))
        trace["cache_bytes"].append(cache.nbytes)
    return trace


# ---------------------------------------------------------------- input checks


def check_generation(model, ids, new_tokens: int) -> None:
    """A TinyGPT, ids (B, T) it can read, and room for ``new_tokens`` more tokens. The
    last token written is never read, so the steps read T + new_tokens - 1 positions:
    a prompt of T tokens may get up to context_length - T + 1 new ones (as
    ``helpers.gpt.decoding.generate(..., context="stop")`` allows)."""
    if not isinstance(model, TinyGPT):
        raise TypeError(f"model must be a TinyGPT (helpers.gpt.model), got "
                        f"{type(model).__name__}")
    check_token_ids(ids, model)
    check_positive_int(new_tokens, "new_tokens")
    T, C = ids.shape[1], model.context_length
    read = T + new_tokens - 1  # positions the steps read: not the last token written
    if read > C:
        raise ValueError(
            f"a prompt of T={T} tokens and new_tokens={new_tokens} would read {read} "
            f"positions (the last token written is not read), but the model has position "
            f"embeddings for context_length={C}: ask for at most {C - T + 1} new tokens, or "
            f"shorten the prompt (a cache cannot slide past the last position)")


def check_prompts(prompts) -> None:
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise TypeError(f"prompts must be a non-empty list of 1-d tensors of token ids, got "
                        f"{type(prompts).__name__}")
    for index, prompt in enumerate(prompts):
        if not isinstance(prompt, torch.Tensor) or prompt.ndim != 1 or len(prompt) == 0 \
                or prompt.is_floating_point() or prompt.dtype == torch.bool:
            got = (f"a {prompt.dtype} tensor of shape {shape_text(prompt)}"
                   if isinstance(prompt, torch.Tensor) else type(prompt).__name__)
            raise TypeError(f"prompts[{index}] must be a 1-d tensor of token ids with at "
                            f"least one token (e.g. encode('abc')), got {got}")
    if len({prompt.dtype for prompt in prompts}) > 1:
        raise TypeError(f"prompts must all have one dtype, got "
                        f"{sorted(str(prompt.dtype) for prompt in prompts)}")


def check_batch(model, ids, is_token, new_tokens: int) -> None:
    check_generation(model, ids, new_tokens)
    if not isinstance(is_token, torch.Tensor) or is_token.dtype != torch.bool \
            or is_token.shape != ids.shape:
        got = (f"a {is_token.dtype} tensor of shape {shape_text(is_token)}"
               if isinstance(is_token, torch.Tensor) else type(is_token).__name__)
        raise ValueError(f"is_token must be a boolean tensor of the shape of ids "
                         f"{shape_text(ids)}, True at real tokens (left_pad returns it), "
                         f"got {got}")
    if not is_token[:, -1].all():
        rows = (~is_token[:, -1]).nonzero().flatten().tolist()
        raise ValueError(f"the prompts must be padded on the LEFT, so that every prompt ends "
                         f"in the last column, where the next token goes; rows {rows} end "
                         f"with padding (left_pad pads on the left)")
    if not is_token.any(dim=1).all():
        rows = (~is_token.any(dim=1)).nonzero().flatten().tolist()
        raise ValueError(f"every prompt needs at least one real token; rows {rows} are all "
                         f"padding")
