"""The reference maths in helpers.attention against PyTorch's own implementations."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import (
    SelfAttention,
    attention_scores,
    attention_weights,
    causal_mask,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from helpers.data import TOKENS, example_batch, example_inputs

# ---------------------------------------------------------------- against torch


@settings(max_examples=50, deadline=None)
@given(B=st.integers(1, 3), T=st.integers(1, 5), H=st.integers(1, 4), head_dim=st.integers(1, 4),
       seed=st.integers(0, 2**31 - 1))
def test_split_heads_gives_each_head_its_slice_and_merge_heads_undoes_it(B, T, H, head_dim, seed):
    x = torch.randn(B, T, H * head_dim, generator=torch.Generator().manual_seed(seed))
    heads = split_heads(x, H)
    assert heads.shape == (B, H, T, head_dim)
    for h in range(H):  # head h reads features h * head_dim .. (h + 1) * head_dim - 1
        assert torch.equal(heads[:, h], x[..., h * head_dim:(h + 1) * head_dim])
    assert torch.equal(merge_heads(heads), x)


def test_split_and_merge_heads_pass_notebook_5s_checks():
    from helpers.checks.multi_head import check_merge_heads, check_split_heads

    assert check_split_heads(split_heads).correct
    assert check_merge_heads(merge_heads).correct


@st.composite
def attention_case(draw):
    """Random shapes, dtype, scale and mask, including rows where every key is masked."""
    leading = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    T_q, T_k = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    d_k, d_v = draw(st.integers(1, 8)), draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    seed = draw(st.integers(0, 2**31 - 1))
    generator = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=dtype)

    query = randn(*leading, T_q, d_k)
    key, value = randn(*leading, T_k, d_k), randn(*leading, T_k, d_v)
    scale = draw(st.one_of(st.none(), st.floats(0.05, 3.0)))
    kind = draw(st.sampled_from(["none", "causal", "bool", "float", "bool_broadcast"]))
    mask, is_causal = None, False
    if kind == "causal":
        is_causal = True
    elif kind in ("bool", "float", "bool_broadcast"):
        shape = (T_q, T_k) if kind == "bool_broadcast" else (*leading, T_q, T_k)
        allowed = torch.rand(*shape, generator=generator) < draw(st.floats(0.0, 1.0))
        if draw(st.booleans()):  # force a fully masked row
            allowed[..., 0, :] = False
        if kind == "float":
            mask = torch.zeros(shape, dtype=dtype).masked_fill(~allowed, float("-inf"))
            mask = mask + randn(*shape) * 0.5  # a float mask is added, whatever its values
        else:
            mask = allowed
    return query, key, value, mask, is_causal, scale


@settings(max_examples=300, deadline=None)
@given(attention_case())
def test_matches_torch_scaled_dot_product_attention(case):
    query, key, value, mask, is_causal, scale = case
    inputs = [tensor.requires_grad_() for tensor in (query, key, value)]
    expected = F.scaled_dot_product_attention(
        query, key, value, attn_mask=mask, is_causal=is_causal, scale=scale)
    output, weights = scaled_dot_product_attention(
        query, key, value, attn_mask=mask, is_causal=is_causal, scale=scale)
    torch.testing.assert_close(output, expected)
    # The gradients too, rows with no key included (a NaN there would reach them).
    upstream = torch.randn(output.shape, generator=torch.Generator().manual_seed(0),
                           dtype=output.dtype)
    expected_grads = torch.autograd.grad((expected * upstream).sum(), inputs)
    grads = torch.autograd.grad((output * upstream).sum(), inputs)
    for name, grad, expected_grad in zip("qkv", grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad, msg=lambda m, name=name: f"d{name}: {m}")
    query, key, value = (tensor.detach() for tensor in inputs)
    # With the identity as values, torch's output *is* its weights matrix.
    T_k = key.shape[-2]
    identity = torch.eye(T_k, dtype=value.dtype).expand(*value.shape[:-2], T_k, T_k)
    torch_weights = F.scaled_dot_product_attention(
        query, key, identity, attn_mask=mask, is_causal=is_causal, scale=scale)
    torch.testing.assert_close(weights, torch_weights)
    # Each row sums to 1, or is all zeros where every key was masked.
    row_sums = weights.sum(-1)
    assert torch.all(((row_sums - 1).abs() < 1e-5) | (row_sums == 0))


def test_fully_masked_row_gives_zero_weights_and_zero_output_like_torch():
    query, key, value = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    output, weights = scaled_dot_product_attention(query, key, value, attn_mask=mask)
    assert torch.equal(weights[1], torch.zeros(5))
    assert torch.equal(output[1], torch.zeros(2))
    torch.testing.assert_close(output, F.scaled_dot_product_attention(query, key, value, mask))
    # The same row through a plain softmax is NaN: the reason for the special case.
    plain = torch.softmax((query @ key.T).masked_fill(~mask, float("-inf")), dim=-1)
    assert torch.isnan(plain[1]).all()


def test_default_scale_is_one_over_sqrt_d_k():
    query, key = torch.randn(4, 9), torch.randn(4, 9)
    torch.testing.assert_close(attention_scores(query, key), query @ key.T / 3.0)
    torch.testing.assert_close(attention_scores(query, key, scale=1.0), query @ key.T)


def test_causal_mask_is_lower_triangular_with_diagonal():
    mask = causal_mask(4)
    assert mask.dtype == torch.bool
    assert torch.equal(mask, torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]],
                                          dtype=torch.bool))
    torch.testing.assert_close(
        attention_weights(torch.randn(4, 3), torch.randn(4, 3), attn_mask=causal_mask(4)).triu(1),
        torch.zeros(4, 4))


def test_dropout_zeroes_and_rescales_the_weights():
    query, key, value = torch.randn(2, 50, 4), torch.randn(2, 50, 4), torch.randn(2, 50, 3)
    _, clean = scaled_dot_product_attention(query, key, value)
    torch.manual_seed(1)
    _, dropped = scaled_dot_product_attention(query, key, value, dropout_p=0.25)
    kept = dropped != 0
    assert 0.65 < kept.float().mean() < 0.85
    torch.testing.assert_close(dropped[kept], clean[kept] / 0.75)
    output, everything_dropped = scaled_dot_product_attention(query, key, value, dropout_p=1.0)
    assert torch.equal(everything_dropped, torch.zeros_like(clean))
    assert torch.equal(output, torch.zeros_like(output))


# ---------------------------------------------------------------- the running example


def test_running_example_is_six_tokens_of_three_features():
    inputs = example_inputs()
    assert inputs.shape == (6, 3) and inputs.dtype == torch.float32
    assert len(TOKENS) == 6
    assert torch.equal(example_batch(2), torch.stack([inputs, inputs]))
    inputs.zero_()  # a learner's change does not leak into the next call
    assert example_inputs().abs().sum() > 0


def test_self_attention_reproduces_the_reference_weights():
    torch.manual_seed(789)
    module = SelfAttention(d_in=3, d_out=2)
    _, weights = module(example_inputs(), return_weights=True)
    reference_first_row = torch.tensor([0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510])
    torch.testing.assert_close(weights[0], reference_first_row, atol=5e-5, rtol=0)


def test_self_attention_matches_torch_on_a_batch():
    torch.manual_seed(3)
    module = SelfAttention(d_in=5, d_out=4, qkv_bias=True)
    x = torch.randn(2, 7, 5)
    expected = F.scaled_dot_product_attention(module.W_query(x), module.W_key(x), module.W_value(x))
    torch.testing.assert_close(module(x), expected)
    assert module(x).shape == (2, 7, 4)


# ---------------------------------------------------------------- errors a learner meets


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: scaled_dot_product_attention([1.0], torch.ones(2, 2), torch.ones(2, 2)),
         TypeError, ["query", "torch.Tensor", "list"]),
        (lambda: scaled_dot_product_attention(torch.ones(3), torch.ones(2, 3), torch.ones(2, 3)),
         ValueError, ["query", "at least 2 dimensions", "(3)"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3), torch.ones(2, 4), torch.ones(2, 3)),
         ValueError, ["query", "key", "d_k", "(2, 3)", "(2, 4)"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(5, 3)),
         ValueError, ["key", "value", "(2, 3)", "(5, 3)"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3, dtype=torch.long),
                                              torch.ones(2, 3), torch.ones(2, 3)),
         TypeError, ["query", "floating-point", "torch.int64"]),
        (lambda: scaled_dot_product_attention(
            torch.ones(2, 3), torch.ones(2, 3, dtype=torch.float64), torch.ones(2, 3)),
         TypeError, ["query", "key", "dtype", "torch.float64"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3),
                                              dropout_p=1.5),
         ValueError, ["dropout_p", "between 0 and 1", "1.5"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3),
                                              dropout_p=-0.1),
         ValueError, ["dropout_p", "-0.1"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3),
                                              attn_mask=torch.ones(3, 3, dtype=torch.bool)),
         ValueError, ["attn_mask", "(3, 3)", "(2, 2)"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3),
                                              attn_mask=torch.ones(2, 2, dtype=torch.long)),
         TypeError, ["attn_mask", "boolean", "torch.int64"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3),
                                              attn_mask=causal_mask(2), is_causal=True),
         ValueError, ["attn_mask", "is_causal", "combine", "math backend refuses"]),
        (lambda: scaled_dot_product_attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3),
                                              scale=0),
         ValueError, ["scale", "greater than 0", "0"]),
        (lambda: scaled_dot_product_attention(torch.ones(4, 2, 3), torch.ones(3, 2, 3),
                                              torch.ones(3, 2, 3)),
         ValueError, ["query", "key", "(4, 2, 3)", "(3, 2, 3)"]),
        (lambda: causal_mask(0), ValueError, ["T", "at least 1", "0"]),
        (lambda: causal_mask(2.5), TypeError, ["T", "int", "float"]),
        (lambda: SelfAttention(3, 2)(torch.ones(6, 4)), ValueError, ["x", "d_in=3", "(6, 4)"]),
        (lambda: SelfAttention(3, 2)(torch.ones(1, 1, 6, 3)),
         ValueError, ["x", "2 or 3", "(1, 1, 6, 3)"]),
        (lambda: SelfAttention(3, 0), ValueError, ["d_out", "at least 1"]),
        (lambda: SelfAttention(3, 2)(torch.ones(6, 3, dtype=torch.float64)), TypeError,
         ["x", "torch.float32", "torch.float64"]),
        (lambda: example_batch(0), ValueError, ["batch_size", "0"]),
    ],
)
def test_bad_input_gets_a_message_naming_the_argument(call, error, words):
    with pytest.raises(error) as raised:
        call()
    message = str(raised.value)
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"


def test_helpers_leave_their_inputs_unchanged():
    query, key, value = torch.randn(2, 4, 3), torch.randn(2, 5, 3), torch.randn(2, 5, 2)
    mask = torch.rand(4, 5) > 0.3
    float_mask = torch.randn(4, 5)
    copies = [t.clone() for t in (query, key, value, mask, float_mask)]
    scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=0.5)
    scaled_dot_product_attention(query, key, value, attn_mask=float_mask, scale=0.3)
    attention_weights(query, key, is_causal=True)
    for original, copy in zip((query, key, value, mask, float_mask), copies, strict=True):
        assert torch.equal(original, copy)
    x = example_inputs()
    SelfAttention(3, 2)(x)
    assert torch.equal(x, example_inputs())
    assert math.isclose(float(x[0, 0]), 0.43, rel_tol=1e-6)
