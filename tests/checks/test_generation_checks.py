"""Notebook 09's exercise checks: a table of right and wrong answers per check (what every
check promises is tested for all exercises in tests/checks/test_exercises.py)."""

import math
import runpy

import numpy as np
import torch
import torch.nn.functional as F

from helpers.attention import position_ids
from helpers.checks.generation import (
    check_attend_over_cache,
    check_kv_cache,
    check_kv_cache_bytes,
    check_next_position_ids,
)
from tests.checks.support import ROOT, table_tests


def bytes_by_element_size(B, T, num_layers, num_heads, head_dim, dtype):
    size = torch.empty(0, dtype=dtype).element_size()
    return 2 * B * T * num_layers * num_heads * head_dim * size


def bytes_by_itemsize(B, T, num_layers, num_heads, head_dim, dtype):
    return B * T * num_layers * 2 * num_heads * head_dim * dtype.itemsize


def bytes_by_finfo(B, T, num_layers, num_heads, head_dim, dtype):
    return 2 * num_layers * B * T * num_heads * head_dim * torch.finfo(dtype).bits // 8


def bytes_by_building_the_cache(B, T, num_layers, num_heads, head_dim, dtype):
    one = torch.zeros(B, num_heads, T, head_dim, dtype=dtype)
    return 2 * num_layers * one.numel() * one.element_size()


def bytes_as_tensor(B, T, num_layers, num_heads, head_dim, dtype):
    return torch.tensor(bytes_by_itemsize(B, T, num_layers, num_heads, head_dim, dtype))


def slip(change):
    def function(B, T, num_layers, num_heads, head_dim, dtype):
        return change(B, T, num_layers, num_heads, head_dim, dtype.itemsize)
    return function


BYTES_RIGHT = {
    "element_size": bytes_by_element_size,
    "dtype.itemsize": bytes_by_itemsize,
    "finfo bits": bytes_by_finfo,
    "a tensor of the cache's shape": bytes_by_building_the_cache,
    "a one-element tensor": bytes_as_tensor,
}

BYTES_WRONG = {
    "keys only": (slip(lambda B, T, L, H, d, n: B * T * L * H * d * n), "not both"),
    "no batch": (slip(lambda B, T, L, H, d, n: 2 * T * L * H * d * n), "batch is missing"),
    "no layers": (slip(lambda B, T, L, H, d, n: 2 * B * T * H * d * n), "layers are missing"),
    "no heads": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * d * n), "heads are missing"),
    "heads twice": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * H * d * n),
                    "counted twice"),
    "numbers, not bytes": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * d),
                           "counts numbers, not bytes"),
    "bits": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * d * n * 8), "counts bits"),
    "always 4 bytes": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * d * 4),
                       "counted as 4 bytes"),
    "T + 1": (slip(lambda B, T, L, H, d, n: 2 * B * (T + 1) * L * H * d * n),
              "one token too many"),
    "in GiB": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * d * n / 1024**3),
               "not a whole number"),
    "something else": (slip(lambda B, T, L, H, d, n: 3 * B * T * L * H * d * n + 1),
                       "too many"),
    "a list": (lambda *sizes: [bytes_by_itemsize(*sizes)], "a list"),
    "no return": (lambda *sizes: None, "None"),
}

# GPT-2 small's cache (one of the check's cases) is what an optional part asks the learner
# to predict: no message gives it away.
GPT2_SMALL_BYTES = 2 * 12 * 12 * 64 * 1024 * 4
test_bytes_right, test_bytes_wrong = table_tests(
    check_kv_cache_bytes, BYTES_RIGHT, BYTES_WRONG,
    giveaways=[f"{GPT2_SMALL_BYTES:,}", str(GPT2_SMALL_BYTES), "MiB", "GPT-2"])


# ---------------------------------------------------------------- attend over the cache


def attend_by_hand(query, cached_keys, cached_values, new_key, new_value):
    keys = torch.cat([cached_keys, new_key], dim=2)
    values = torch.cat([cached_values, new_value], dim=2)
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
    return torch.softmax(scores, dim=-1) @ values


def attend_sdpa(query, cached_keys, cached_values, new_key, new_value):
    keys = torch.cat([cached_keys, new_key], dim=-2)
    values = torch.cat([cached_values, new_value], dim=-2)
    return F.scaled_dot_product_attention(query, keys, values)


def attend_new_first(query, cached_keys, cached_values, new_key, new_value):
    keys = torch.cat([new_key, cached_keys], dim=2)  # the same keys in another order
    values = torch.cat([new_value, cached_values], dim=2)  # and the values in the same one
    return F.scaled_dot_product_attention(query, keys, values)


def attend_with_lower_right_mask(query, cached_keys, cached_values, new_key, new_value):
    from torch.nn.attention.bias import causal_lower_right

    keys = torch.cat([cached_keys, new_key], dim=2)
    values = torch.cat([cached_values, new_value], dim=2)
    mask = causal_lower_right(1, keys.shape[2])
    return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask)


def attend_float64(query, cached_keys, cached_values, new_key, new_value):
    return attend_by_hand(query.double(), cached_keys.double(), cached_values.double(),
                          new_key.double(), new_value.double()).float()


NOTEBOOK_HEAD_DIM = 16  # head_dim in notebook 9, where learners may reuse the variable


def with_both(function):
    def answer(query, cached_keys, cached_values, new_key, new_value):
        keys = torch.cat([cached_keys, new_key], dim=2)
        values = torch.cat([cached_values, new_value], dim=2)
        return function(query, keys, values)
    return answer


ATTEND_RIGHT = {
    "by hand": attend_by_hand,
    "F.scaled_dot_product_attention": attend_sdpa,
    "new token first": attend_new_first,
    "causal_lower_right": attend_with_lower_right_mask,
    "float64": attend_float64,
}

ATTEND_WRONG = {
    "cache only": (lambda q, ck, cv, nk, nv: F.scaled_dot_product_attention(q, ck, cv),
                   "cached tokens only"),
    "is_causal=True": (with_both(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True)), "aligned top-left"),
    "no scale": (with_both(lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1), -1) @ v),
                 "not scaled"),
    "divided by head_dim": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1) / q.shape[-1], -1) @ v), "not by its square root"),
    "the notebook's head_dim": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1) / math.sqrt(NOTEBOOK_HEAD_DIM), -1) @ v),
        "16 is the head_dim of the notebook's model"),
    "keys and values swapped": (with_both(lambda q, k, v: F.scaled_dot_product_attention(
        q, v, k)), "the keys and the values are swapped"),
    "new key and value swapped": (lambda q, ck, cv, nk, nv: F.scaled_dot_product_attention(
        q, torch.cat([ck, nv], 2), torch.cat([cv, nk], 2)), "new key and the new value are "
                                                            "swapped"),
    "scaled by d_model": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1) / math.sqrt(q.shape[1] * q.shape[-1]), -1) @ v),
        "sqrt(H * head_dim)"),
    "values in another order": (lambda q, ck, cv, nk, nv: F.scaled_dot_product_attention(
        q, torch.cat([ck, nk], 2), torch.cat([nv, cv], 2)), "not in the same order"),
    "softmax over the queries": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1), dim=-2) @ v), "over the queries axis"),
    "weights returned": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)), "attention weights"),
    "cat on the heads": (lambda q, ck, cv, nk, nv: F.scaled_dot_product_attention(
        q, torch.cat([ck, nk], dim=1), torch.cat([cv, nv], dim=1)), "other than the tokens"),
    "keys not transposed": (with_both(lambda q, k, v: torch.softmax(
        q @ k / math.sqrt(q.shape[-1]), -1) @ v), "do not fit a matrix product"),
    "shape (B, H, head_dim)": (lambda *args: attend_by_hand(*args)[:, :, 0], "returned shape"),
    "no return": (lambda *args: None, "`return`"),
}

test_attend_right, test_attend_wrong = table_tests(check_attend_over_cache, ATTEND_RIGHT,
                                                   ATTEND_WRONG)


def test_the_notebooks_head_dim_is_the_one_the_check_names():
    """The check names 16 as the notebook's head_dim: the notebook prints it."""
    import re

    import nbformat

    from helpers.checks.generation import NOTEBOOK_HEAD_DIM as named

    notebook = nbformat.read(ROOT / "notebooks/09_generation_kv_cache.ipynb", as_version=4)
    printed = [int(found) for cell in notebook.cells if cell.cell_type == "code"
               for output in cell.outputs
               for found in re.findall(r"head_dim = (\d+)", output.get("text", ""))]
    assert printed and set(printed) == {named} == {NOTEBOOK_HEAD_DIM}


# ---------------------------------------------------------------- the cache class

Solution = runpy.run_path(str(ROOT / "solutions/09_generation_kv_cache/my_kv_cache.py"))[
    "MyKVCache"]


class CacheInADict:
    """(keys, values) per layer in a dict, joined on the tokens axis counted from the end."""

    def __init__(self):
        self.layers = {}

    def append(self, layer, keys, values):
        if layer in self.layers:
            cached_keys, cached_values = self.layers[layer]
            keys = torch.cat((cached_keys, keys), dim=-2)
            values = torch.cat((cached_values, values), dim=-2)
        self.layers[layer] = (keys, values)
        return keys, values

    def __len__(self):
        return self.layers[0][0].size(-2) if self.layers else 0


class CacheOfChunks:
    """Every append kept as it came, joined when asked; tokens counted at layer 0."""

    def __init__(self):
        self.chunks, self.tokens = [], 0

    def append(self, layer, keys, values):
        if layer == len(self.chunks):
            self.chunks.append([])
        if layer == 0:
            self.tokens += keys.shape[2]
        self.chunks[layer].append((keys, values))
        return (torch.cat([k for k, _ in self.chunks[layer]], dim=2),
                torch.cat([v for _, v in self.chunks[layer]], dim=2))

    def __len__(self):
        return self.tokens


class CacheWithLayerCount(Solution):
    """Its layers created ahead, empty tensors to start from."""

    def append(self, layer, keys, values):
        while len(self.keys) <= layer:
            self.keys.append(keys[:, :, :0])
            self.values.append(values[:, :, :0])
        return super().append(layer, keys, values)

    def __len__(self):
        return self.keys[0].shape[2] if self.keys else 0


def with_append(append):
    return type("Slip", (Solution,), {"append": append})


def with_len(length):
    return type("Slip", (Solution,), {"__len__": length})


def joined_along(dim, new_first=False):
    def append(self, layer, keys, values):
        if layer == len(self.keys):
            self.keys.append(keys)
            self.values.append(values)
        else:
            pairs = [(keys, self.keys[layer]), (values, self.values[layer])]
            if not new_first:
                pairs = [(old, new) for new, old in pairs]
            self.keys[layer] = torch.cat(pairs[0], dim=dim)
            self.values[layer] = torch.cat(pairs[1], dim=dim)
        return self.keys[layer], self.values[layer]
    return append


def forgets_the_values(self, layer, keys, values):
    if layer == len(self.keys):
        self.keys.append(keys)
        self.values.append(values)
    else:
        self.keys[layer] = torch.cat([self.keys[layer], keys], dim=2)
    return self.keys[layer], self.values[layer]


def joins_but_does_not_store(self, layer, keys, values):
    if layer == len(self.keys):
        self.keys.append(keys)
        self.values.append(values)
        return keys, values
    return (torch.cat([self.keys[layer], keys], dim=2),
            torch.cat([self.values[layer], values], dim=2))


def returns_the_cache_before(self, layer, keys, values):
    before = (self.keys[layer], self.values[layer]) if layer < len(self.keys) else (keys, values)
    Solution.append(self, layer, keys, values)
    return before


class OneCacheForAllLayers:
    def __init__(self):
        self.keys = self.values = None

    def append(self, layer, keys, values):
        self.keys = keys if self.keys is None else torch.cat([self.keys, keys], dim=2)
        self.values = values if self.values is None else torch.cat([self.values, values], dim=2)
        return self.keys, self.values

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]


class ListsInTheClassBody(Solution):
    keys, values = [], []

    def __init__(self):
        pass


class ListsAsDefaults(Solution):
    def __init__(self, keys=[], values=[]):  # noqa: B006 - the slip under test
        self.keys, self.values = keys, values


class NoLength:
    __init__, append = Solution.__init__, Solution.append


CACHE_RIGHT = {
    "lists": Solution,
    "a dict": CacheInADict,
    "chunks": CacheOfChunks,
    "empty tensors first": CacheWithLayerCount,
}

CACHE_WRONG = {
    "only the new tokens": (with_append(
        lambda self, layer, k, v: (Solution.append(self, layer, k, v), (k, v))[1]),
        "only the new tokens"),
    "new before cached": (with_append(joined_along(2, new_first=True)), "went before"),
    "heads axis": (with_append(joined_along(1)), "dimension 2"),
    "features axis": (with_append(joined_along(3)), "dimension 2"),
    "one cache for all layers": (OneCacheForAllLayers, "another layer's"),
    "values first": (with_append(
        lambda self, layer, k, v: Solution.append(self, layer, k, v)[::-1]), "values first"),
    "no return": (with_append(lambda self, layer, k, v: None), "`return`"),
    "keys only": (with_append(lambda self, layer, k, v: Solution.append(self, layer, k, v)[0]),
                  "expected a pair"),
    "len counts layers": (with_len(lambda self: len(self.keys)), "counts the layers"),
    "len counts appends": (type("Slip", (Solution,), {
        "calls": 0,
        "append": lambda self, layer, k, v: (setattr(self, "calls", self.calls + 1),
                                             Solution.append(self, layer, k, v))[1],
        "__len__": lambda self: self.calls}), "calls to append"),
    "len of an empty cache": (with_len(lambda self: self.keys[0].shape[2]), "holds no token"),
    "no __len__": (NoLength, "no __len__"),
    "lists in the class body": (ListsInTheClassBody, "shares its lists"),
    "lists as default arguments": (ListsAsDefaults, "shares its lists"),
    "values not joined": (with_append(forgets_the_values), "not the values"),
    "the cache before": (with_append(returns_the_cache_before), "cached before this call"),
    "joined, not stored back": (with_append(joins_but_does_not_store), "store the joined"),
    "len of an empty dict cache": (type("Slip", (CacheInADict,), {
        "__len__": lambda self: self.layers[0][0].shape[2]}), "holds no token"),
    "len counts B * T": (with_len(lambda self: self.keys[0].shape[0] * self.keys[0].shape[2]
                                  if self.keys else 0), "3 tokens are cached"),
    "changes the keys": (with_append(
        lambda self, layer, k, v: Solution.append(self, layer, k.mul_(2), v)), "in place"),
}

test_cache_right, test_cache_wrong = table_tests(check_kv_cache, CACHE_RIGHT, CACHE_WRONG)


# ---------------------------------------------------------------- next positions


POSITIONS_RIGHT = {
    "sum, keepdim": lambda is_token: is_token.sum(dim=-1, keepdim=True),
    "long sum, then a column": lambda is_token: is_token.long().sum(1)[:, None],
    "position_ids + 1": lambda is_token: position_ids(is_token)[:, -1:] + 1,
    "cumsum": lambda is_token: is_token.int().cumsum(dim=-1)[:, -1:],
    "NumPy": lambda is_token: torch.from_numpy(np.count_nonzero(is_token.numpy(), axis=1)
                                               .reshape(-1, 1)),
}

POSITIONS_WRONG = {
    "columns": (lambda m: torch.full((m.shape[0], 1), m.shape[1]), "number of columns"),
    "arange": (lambda m: torch.arange(m.shape[1] + 1)[-1:].expand(m.shape[0], 1),
               "number of columns"),
    "last real token": (lambda m: m.sum(-1, keepdim=True) - 1, "last real token"),
    "position_ids, last": (lambda m: position_ids(m)[:, -1:], "last real token"),
    "last column's index": (lambda m: torch.full((m.shape[0], 1), m.shape[1] - 1),
                            "last column's index"),
    "padding counted": (lambda m: (~m).sum(-1, keepdim=True), "counts the padding"),
    "one per row": (lambda m: m.sum(-1), "one number per row"),
    "over the batch": (lambda m: m.sum(0), "summed over the batch"),
    "float mean": (lambda m: m.float().sum(-1, keepdim=True), "must be integers"),
    "bool": (lambda m: m[:, -1:], "must be integers"),
    "changes is_token": (lambda m: m.logical_not_().sum(-1, keepdim=True), "in place"),
    "no return": (lambda m: None, "`return`"),
    "another device": (lambda m: m.sum(-1, keepdim=True).to("meta"), "on device 'meta'"),
}

test_positions_right, test_positions_wrong = table_tests(check_next_position_ids,
                                                         POSITIONS_RIGHT, POSITIONS_WRONG)

TABLES = {check_kv_cache_bytes: (BYTES_RIGHT, BYTES_WRONG),
          check_kv_cache: (CACHE_RIGHT, CACHE_WRONG),
          check_attend_over_cache: (ATTEND_RIGHT, ATTEND_WRONG),
          check_next_position_ids: (POSITIONS_RIGHT, POSITIONS_WRONG)}


def test_the_solution_cache_drives_generation_as_the_courses_does():
    """What exercise 2's last cell does: the learner's cache in the course's loop."""
    from helpers.gpt.decoding import generate
    from helpers.gpt.model import TinyGPT

    torch.manual_seed(0)
    model = TinyGPT(16, 24).eval()
    prompts = torch.randint(0, 16, (3, 5), generator=torch.Generator().manual_seed(1))
    yours, your_logits = generate(model, prompts, 12, cache_factory=Solution)
    courses, course_logits = generate(model, prompts, 12)
    assert torch.equal(yours, courses) and torch.equal(your_logits, course_logits)
