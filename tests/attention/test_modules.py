"""CausalAttention, MultiHeadAttentionWrapper and MultiHeadAttention against PyTorch."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import CausalAttention, MultiHeadAttention, MultiHeadAttentionWrapper
from helpers.data import example_batch
from tests.errors import assert_error_names


def test_causal_attention_reproduces_the_reference_output():
    torch.manual_seed(123)
    module = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0)
    output = module(example_batch(2))
    reference_first_sequence = torch.tensor(
        [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
         [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]])
    torch.testing.assert_close(output[0], reference_first_sequence, atol=5e-5, rtol=0)
    torch.testing.assert_close(output[1], output[0])


def test_multi_head_attention_reproduces_the_reference_output():
    torch.manual_seed(123)
    module = MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2)
    output = module(example_batch(2))
    reference_first_sequence = torch.tensor(
        [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593],
         [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]])
    torch.testing.assert_close(output[0], reference_first_sequence, atol=5e-5, rtol=0)


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 3), T=st.integers(1, 8), extra=st.integers(0, 3),
       d_in=st.integers(1, 6), d_out=st.integers(1, 6), bias=st.booleans(),
       seed=st.integers(0, 999))
def test_causal_attention_matches_torch_sdpa_is_causal(B, T, extra, d_in, d_out, bias, seed):
    torch.manual_seed(seed)
    module = CausalAttention(d_in, d_out, context_length=T + extra, qkv_bias=bias)
    x = torch.randn(B, T, d_in)
    expected = F.scaled_dot_product_attention(
        module.W_query(x), module.W_key(x), module.W_value(x), is_causal=True)
    torch.testing.assert_close(module(x), expected)


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 3), T=st.integers(1, 8), num_heads=st.integers(1, 4),
       head_dim=st.integers(1, 4), bias=st.booleans(), seed=st.integers(0, 999))
def test_multi_head_attention_matches_nn_multihead_attention(B, T, num_heads, head_dim, bias, seed):
    torch.manual_seed(seed)
    d = num_heads * head_dim  # nn.MultiheadAttention needs d_in == d_out
    ours = MultiHeadAttention(d, d, context_length=8, dropout=0.0, num_heads=num_heads,
                              qkv_bias=bias)
    theirs = torch.nn.MultiheadAttention(d, num_heads, bias=True, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.W_query.weight, ours.W_key.weight,
                                               ours.W_value.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.W_query.bias, ours.W_key.bias,
                                             ours.W_value.bias]) if bias else torch.zeros(3 * d))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)
    x = torch.randn(B, T, d)
    blocked = torch.ones(T, T, dtype=torch.bool).triu(1)  # nn.MultiheadAttention: True = blocked
    expected, expected_weights = theirs(x, x, x, attn_mask=blocked, average_attn_weights=False)
    output, weights = ours(x, return_weights=True)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(weights, expected_weights)


def test_wrapper_and_efficient_version_compute_the_same_function():
    torch.manual_seed(0)
    num_heads, d_in, head_dim = 3, 4, 2
    wrapper = MultiHeadAttentionWrapper(d_in, head_dim, 6, 0.0, num_heads)
    efficient = MultiHeadAttention(d_in, num_heads * head_dim, 6, 0.0, num_heads)
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            stacked = torch.cat([getattr(head, name).weight for head in wrapper.heads])
            getattr(efficient, name).weight.copy_(stacked)
        efficient.out_proj.weight.copy_(torch.eye(num_heads * head_dim))
        efficient.out_proj.bias.zero_()
    x = torch.randn(2, 5, d_in)
    torch.testing.assert_close(efficient(x), wrapper(x))


def test_the_mask_is_a_buffer_that_is_not_saved():
    module = CausalAttention(3, 2, context_length=4)
    assert "causal_mask" in dict(module.named_buffers())
    assert "causal_mask" not in module.state_dict()
    assert module.causal_mask.dtype == torch.bool


def test_dropout_acts_in_training_only():
    torch.manual_seed(0)
    module = MultiHeadAttention(3, 4, context_length=6, dropout=0.5, num_heads=2)
    x = example_batch(2)
    module.eval()
    torch.testing.assert_close(module(x), module(x))
    _, weights = module(x, return_weights=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 6))
    module.train()
    _, dropped = module(x, return_weights=True)
    assert (dropped == 0).sum() > (weights == 0).sum()  # some allowed weights were dropped
    kept = dropped > 0
    torch.testing.assert_close(dropped[kept], weights[kept] / (1 - 0.5))  # the rest scaled up


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: MultiHeadAttention(3, 5, 6, 0.0, num_heads=2), ValueError,
         ["d_out", "divisible", "num_heads", "d_out=5", "num_heads=2"]),
        (lambda: CausalAttention(3, 2, 6)(torch.ones(1, 7, 3)), ValueError,
         ["T=7", "context_length=6"]),
        (lambda: MultiHeadAttention(3, 2, 6, 0.0, 2)(torch.ones(1, 8, 3)), ValueError,
         ["T=8", "context_length=6"]),
        (lambda: CausalAttention(3, 2, 6)(torch.ones(6, 3)), ValueError,
         ["x", "3 dimensions", "(6, 3)"]),
        (lambda: MultiHeadAttention(3, 2, 6, 0.0, 2)(torch.ones(1, 6, 4)), ValueError,
         ["x", "d_in=3", "(1, 6, 4)"]),
        (lambda: CausalAttention(3, 2, 6, dropout=1.2), ValueError, ["dropout", "1.2"]),
        (lambda: MultiHeadAttention(3, 2, 6, 0.0, num_heads=0), ValueError, ["num_heads"]),
        (lambda: CausalAttention(3, 2, 6)(torch.ones(1, 6, 3, dtype=torch.long)), TypeError,
         ["x", "floating-point"]),
        (lambda: MultiHeadAttention(3, 2, 6, 0.0, 2)(torch.ones(1, 6, 3, dtype=torch.float64)),
         TypeError, ["x", "torch.float32", "torch.float64"]),
    ],
)
def test_bad_input_gets_a_message_naming_the_argument(call, error, words):
    assert_error_names(call, error, words)


def test_modules_leave_their_input_unchanged():
    x = torch.randn(2, 5, 4)
    copy = x.clone()
    CausalAttention(4, 3, 6, dropout=0.3)(x)
    MultiHeadAttention(4, 4, 6, 0.3, 2)(x)
    MultiHeadAttentionWrapper(4, 2, 6, 0.3, 2)(x)
    assert torch.equal(x, copy)
