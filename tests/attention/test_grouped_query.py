"""GroupedQueryAttention: with as many key/value heads as query heads it is
MultiHeadAttention (the same weights; the same output up to float32 rounding, since its
repeated keys and values are laid out in memory otherwise, and a matrix product may add in
another order); otherwise it equals PyTorch's scaled_dot_product_attention with
enable_gqa=True on the un-repeated keys and values; the keys and values a cache keeps
shrink with num_kv_heads; bad arguments are explained."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import MultiHeadAttention, padding_mask
from helpers.attention.grouped_query import GroupedQueryAttention
from tests.errors import assert_error_names


def built(layer, *arguments, seed=0, **keywords):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return layer(*arguments, **keywords)


def test_as_many_kv_heads_as_heads_is_multi_head_attention_weights_and_output():
    mha = built(MultiHeadAttention, 12, 16, 10, 0.0, num_heads=4, qkv_bias=True)
    gqa = built(GroupedQueryAttention, 12, 16, 10, 0.0, num_heads=4, num_kv_heads=4,
                qkv_bias=True)
    # the same seed draws the same weights: same layers, same shapes, same order
    assert list(gqa.state_dict()) == list(mha.state_dict())
    assert all(torch.equal(gqa.state_dict()[name], value)
               for name, value in mha.state_dict().items())
    x = torch.randn(3, 7, 12, generator=torch.Generator().manual_seed(1))
    is_token = padding_mask([7, 5, 2], side="left")  # (B, T)
    with torch.no_grad():
        torch.testing.assert_close(gqa(x), mha(x), rtol=0, atol=1e-6)
        out, weights = gqa(x, is_token, return_weights=True)
        expected, expected_weights = mha(x, is_token, return_weights=True)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-6)


def test_loaded_with_multi_head_attentions_weights_it_gives_its_output():
    mha = built(MultiHeadAttention, 6, 8, 5, 0.0, num_heads=2, seed=3)
    gqa = built(GroupedQueryAttention, 6, 8, 5, 0.0, num_heads=2, num_kv_heads=2, seed=4)
    gqa.load_state_dict(mha.state_dict())
    x = torch.randn(2, 5, 6, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(gqa(x), mha(x), rtol=0, atol=1e-6)


def sdpa_reference(layer: GroupedQueryAttention, x):
    """The same layer through F.scaled_dot_product_attention(..., enable_gqa=True),
    with keys and values of num_kv_heads heads, not repeated."""
    B, T, _ = x.shape
    H, H_kv, head_dim = layer.num_heads, layer.num_kv_heads, layer.head_dim
    q = layer.W_query(x).view(B, T, H, head_dim).transpose(1, 2)  # (B, H, T, head_dim)
    k = layer.W_key(x).view(B, T, H_kv, head_dim).transpose(1, 2)  # (B, H_kv, T, head_dim)
    v = layer.W_value(x).view(B, T, H_kv, head_dim).transpose(1, 2)  # (B, H_kv, T, head_dim)
    context = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return layer.out_proj(context.transpose(1, 2).reshape(B, T, H * head_dim))


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 3), T=st.integers(1, 8), num_kv_heads=st.sampled_from([1, 2, 3]),
       group_size=st.integers(1, 3), head_dim=st.integers(1, 4), d_in=st.integers(1, 6),
       bias=st.booleans(), seed=st.integers(0, 999))
def test_it_equals_sdpa_with_enable_gqa(B, T, num_kv_heads, group_size, head_dim, d_in, bias,
                                        seed):
    num_heads = num_kv_heads * group_size
    layer = built(GroupedQueryAttention, d_in, num_heads * head_dim, 8, 0.0, num_heads,
                  num_kv_heads, qkv_bias=bias, seed=seed)
    x = torch.randn(B, T, d_in, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        torch.testing.assert_close(layer(x), sdpa_reference(layer, x))


def test_one_kv_head_is_multi_query_attention_one_key_and_value_head_for_all():
    layer = built(GroupedQueryAttention, 8, 16, 6, 0.0, num_heads=4, num_kv_heads=1)
    mha = built(MultiHeadAttention, 8, 16, 6, 0.0, num_heads=4)
    assert layer.W_key.out_features == layer.W_value.out_features == layer.head_dim == 4
    assert layer.group_size == 4
    assert layer.W_key.weight.numel() * 4 == mha.W_key.weight.numel()
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(layer(x), sdpa_reference(layer, x))


def test_the_cached_keys_and_values_shrink_with_the_number_of_kv_heads():
    B, T, d_in, num_heads, head_dim = 2, 16, 32, 8, 4
    x = torch.randn(B, T, d_in, generator=torch.Generator().manual_seed(5))
    sizes = {}
    for num_kv_heads in (num_heads, num_heads // 2, 1):
        layer = built(GroupedQueryAttention, d_in, num_heads * head_dim, T, 0.0, num_heads,
                      num_kv_heads)
        with torch.no_grad():
            keys, values = layer.W_key(x), layer.W_value(x)  # what a cache keeps, per token
        assert keys.shape == values.shape == (B, T, num_kv_heads * head_dim)
        sizes[num_kv_heads] = keys.nbytes + values.nbytes
        assert sizes[num_kv_heads] == 2 * B * T * num_kv_heads * head_dim * 4  # float32
    assert sizes[8] == 2 * sizes[4] == 8 * sizes[1]


def test_the_causal_mask_is_a_buffer_left_out_of_the_state_dict():
    layer = GroupedQueryAttention(4, 8, 6, 0.0, num_heads=2, num_kv_heads=1)
    assert "causal_mask" in dict(layer.named_buffers())
    assert "causal_mask" not in layer.state_dict()


@pytest.mark.parametrize("arguments, error, words", [
    ((8, 12, 6, 0.0, 4, 3), ValueError,
     ["num_heads must be divisible by num_kv_heads", "num_heads=4", "num_kv_heads=3"]),
    ((8, 12, 6, 0.0, 4, 0), ValueError, ["num_kv_heads", "0"]),
    ((8, 12, 6, 0.0, 4, 2.0), TypeError, ["num_kv_heads", "float"]),
    ((8, 10, 6, 0.0, 4, 2), ValueError, ["d_out must be divisible by num_heads", "d_out=10"]),
    ((8, 12, 6, 1.5, 4, 2), ValueError, ["dropout", "1.5"]),
])
def test_bad_arguments_are_explained(arguments, error, words):
    assert_error_names(lambda: GroupedQueryAttention(*arguments), error, words)


def test_bad_input_is_explained():
    layer = GroupedQueryAttention(8, 12, 6, 0.0, num_heads=4, num_kv_heads=2)
    assert_error_names(lambda: layer(torch.randn(1, 7, 8)), ValueError,
                       ["T=7", "context_length=6"])
    assert_error_names(lambda: layer(torch.randn(1, 5, 9)), ValueError,
                       ["d_in=8", "(1, 5, 9)"])
