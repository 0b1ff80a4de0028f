"""Notebook 09's pre-allocated cache: allocated once, written in place, handing out views;
generation with it writes what KVCache's writes; full and bad input are explained."""

import pytest
import torch

from helpers.gpt.decoding import generate
from helpers.gpt.generation import KVCache, forward_with_cache, generate_with_cache
from helpers.gpt.model import TinyGPT
from helpers.gpt.static_cache import StaticKVCache
from helpers.threads import one_thread
from tests.errors import assert_error_names


@pytest.fixture(autouse=True)
def on_one_thread():
    with one_thread():
        yield


def model_with(context_length=64, seed=0, **sizes):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        sizes = {"d_model": 16, "num_heads": 2, "num_layers": 2, **sizes}
        return TinyGPT(8, context_length, **sizes).eval()


def random_ids(B, T, seed=0):
    return torch.randint(0, 8, (B, T), generator=torch.Generator().manual_seed(seed))


class ContiguousKVCache(KVCache):
    """KVCache, keeping a contiguous copy of what it is given (the prefill's keys are a
    transposed view of the projection): the memory layout of StaticKVCache's slots."""

    def append(self, layer, keys, values):
        return super().append(layer, keys.contiguous(), values.contiguous())


def test_generation_with_it_writes_what_kvcache_writes():
    model = model_with(d_model=24, num_heads=3, num_layers=3)
    for B, T in [(1, 5), (3, 9)]:
        ids = random_ids(B, T, seed=B)
        expected, expected_logits = generate_with_cache(model, ids, 50)
        written, logits = generate(model, ids, 50,
                                   cache_factory=lambda B=B: StaticKVCache.for_model(model, B))
        assert torch.equal(written, expected)
        # The same sums: only the prefill's key layout differs (KVCache keeps the
        # projection's transposed view), so the logits agree to float32 rounding ...
        torch.testing.assert_close(logits, expected_logits, atol=1e-6, rtol=1e-6)
        # ... and to the last bit with a KVCache that keeps contiguous copies
        same_layout, same_layout_logits = generate(model, ids, 50,
                                                   cache_factory=ContiguousKVCache)
        assert torch.equal(written, same_layout) and torch.equal(logits, same_layout_logits)


def test_it_is_allocated_once_and_hands_out_views_of_its_storage():
    model = model_with()
    cache = StaticKVCache.for_model(model, batch_size=2, max_tokens=20)
    L, H, head_dim = 2, 2, 8
    assert cache.keys.shape == cache.values.shape == (L, 2, H, 20, head_dim)
    allocated = 2 * L * 2 * H * 20 * head_dim * 4  # keys and values, float32
    assert cache.nbytes == allocated and len(cache) == 0
    storages = (cache.keys.data_ptr(), cache.values.data_ptr())
    ids = random_ids(2, 20)
    growing = KVCache()
    with torch.no_grad():
        forward_with_cache(model, ids[:, :7], cache)  # a prefill of 7
        forward_with_cache(model, ids[:, :7], growing)
        for t in range(7, 20):  # then one token at a time, up to max_tokens
            forward_with_cache(model, ids[:, t:t + 1], cache)
            forward_with_cache(model, ids[:, t:t + 1], growing)
            assert len(cache) == len(growing) == t + 1
            assert cache.nbytes == allocated  # the growing one's grows: 2 * L * H * ...
            assert growing.nbytes == allocated * (t + 1) // 20
    assert (cache.keys.data_ptr(), cache.values.data_ptr()) == storages  # never reallocated
    for layer in range(L):
        torch.testing.assert_close(cache.keys[layer], growing.keys[layer], atol=1e-6, rtol=0)
        torch.testing.assert_close(cache.values[layer], growing.values[layer], atol=1e-6, rtol=0)


def test_append_writes_in_place_and_returns_views_of_the_filled_part():
    cache = StaticKVCache(num_layers=2, batch_size=1, num_heads=2, max_tokens=6, head_dim=3)
    generator = torch.Generator().manual_seed(0)
    first_keys, first_values = torch.randn(2, 1, 2, 4, 3, generator=generator)
    keys, values = cache.append(0, first_keys, first_values)
    assert keys.shape == (1, 2, 4, 3) and torch.equal(keys, first_keys)
    assert keys.data_ptr() == cache.keys.data_ptr()  # a view: slot 0 of layer 0
    assert len(cache) == 4
    new_keys, new_values = torch.randn(2, 1, 2, 2, 3, generator=generator)
    keys, values = cache.append(0, new_keys, new_values)
    assert torch.equal(keys, torch.cat([first_keys, new_keys], dim=2))
    assert torch.equal(values, torch.cat([first_values, new_values], dim=2))
    keys[0, 0, 0, 0] = 100.0  # a view: writing to it writes into the cache
    assert cache.keys[0, 0, 0, 0, 0] == 100.0
    assert cache.lengths == [6, 0] and cache.keys[1].abs().sum() == 0


def test_a_full_cache_says_so_and_is_left_as_it_was():
    cache = StaticKVCache(1, 1, 1, 5, 2)
    cache.append(0, torch.ones(1, 1, 4, 2), torch.ones(1, 1, 4, 2))
    before = cache.keys.clone()
    assert_error_names(lambda: cache.append(0, torch.ones(1, 1, 2, 2), torch.ones(1, 1, 2, 2)),
                       ValueError, ["full", "layer 0 holds 4 of max_tokens=5", "2 more",
                                    "larger max_tokens", "context='recompute'"])
    assert len(cache) == 4 and torch.equal(cache.keys, before)


def test_for_model_takes_the_models_sizes_dtype_and_context_length():
    model = model_with(context_length=12, d_model=24, num_heads=4, num_layers=3).double()
    cache = StaticKVCache.for_model(model, batch_size=5)
    assert cache.keys.shape == (3, 5, 4, 12, 6) and cache.keys.dtype == torch.float64
    assert StaticKVCache(1, 1, 1, 1, 1, dtype=torch.float16).nbytes == 2 * 2


def test_append_never_changes_the_given_keys_and_values():
    cache = StaticKVCache(1, 2, 2, 8, 4)
    keys, values = torch.randn(2, 2, 2, 3, 4, generator=torch.Generator().manual_seed(1))
    keys_before, values_before = keys.clone(), values.clone()
    returned_keys, _ = cache.append(0, keys, values)
    returned_keys += 1.0  # writing to the returned view changes the cache, not the input
    assert torch.equal(keys, keys_before) and torch.equal(values, values_before)


ONES = torch.ones(1, 2, 1, 4)


@pytest.mark.parametrize("call, error, words", [
    (lambda c: c.append(2, ONES, ONES), ValueError, ["layer", "0 to 1", "num_layers=2", "2"]),
    (lambda c: c.append(-1, ONES, ONES), ValueError, ["layer", "-1"]),
    (lambda c: c.append(0, torch.ones(1, 3, 1, 4), ONES), ValueError,
     ["keys", "(1, 2, T_new, 4)", "(1, 3, 1, 4)"]),
    (lambda c: c.append(0, ONES, torch.ones(1, 2, 1, 5)), ValueError, ["values", "(1, 2, 1, 5)"]),
    (lambda c: c.append(0, ONES, torch.ones(1, 2, 2, 4)), ValueError,
     ["keys and values", "(1, 2, 1, 4)", "(1, 2, 2, 4)"]),
    (lambda c: c.append(0, ONES.double(), ONES), TypeError, ["keys", "torch.float32",
                                                             "torch.float64"]),
    (lambda c: c.append(0, ONES[0], ONES), ValueError, ["keys", "4 dimensions"]),
    (lambda c: StaticKVCache(2, 1, 2, 0, 4), ValueError, ["max_tokens", "0"]),
    (lambda c: StaticKVCache(2, 1.5, 2, 8, 4), TypeError, ["batch_size", "float"]),
])
def test_bad_input_is_explained(call, error, words):
    assert_error_names(lambda: call(StaticKVCache(2, 1, 2, 8, 4)), error, words)
