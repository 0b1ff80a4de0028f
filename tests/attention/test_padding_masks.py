"""Padding masks: builders, the classes' padding_mask argument, position ids, and the
each-sequence-alone test (outputs at real tokens equal each sequence run alone, unpadded)."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    causal_padding_attn_mask,
    key_padding_attn_mask,
    padding_mask,
    position_ids,
    scaled_dot_product_attention,
)
from tests.errors import assert_error_names


def test_padding_mask_on_both_sides():
    assert padding_mask([3, 1, 0], T=4).int().tolist() == [[1, 1, 1, 0], [1, 0, 0, 0],
                                                           [0, 0, 0, 0]]
    assert padding_mask([3, 1, 0], T=4, side="left").int().tolist() == [[0, 1, 1, 1],
                                                                        [0, 0, 0, 1],
                                                                        [0, 0, 0, 0]]
    assert padding_mask(torch.tensor([2, 2])).shape == (2, 2)


def test_attention_masks_hide_keys_not_queries():
    is_token = padding_mask([2, 3], T=3)
    keys_only = key_padding_attn_mask(is_token)
    assert keys_only.shape == (2, 1, 1, 3)
    combined = causal_padding_attn_mask(is_token)
    assert combined.shape == (2, 1, 3, 3)
    # sequence 0: key 2 is padding, hidden from every query; query 2 (padding) still sees keys 0, 1
    assert combined[0, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 0]]


def modules(d_in, seed):
    torch.manual_seed(seed)
    return [CausalAttention(d_in, 4, context_length=8),
            MultiHeadAttention(d_in, 4, context_length=8, dropout=0.0, num_heads=2),
            MultiHeadAttentionWrapper(d_in, 2, context_length=8, dropout=0.0, num_heads=2)]


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=4),
       side=st.sampled_from(["right", "left"]), seed=st.integers(0, 999))
def test_real_tokens_get_the_outputs_they_get_alone(lengths, side, seed):
    T, d_in = 6, 3
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(len(lengths), T, d_in, generator=generator)  # padding positions hold junk
    is_token = padding_mask(lengths, T, side=side)
    for module in modules(d_in, seed):
        with torch.no_grad():
            padded = module(x, is_token)
            assert not torch.isnan(padded).any(), "a padded query must not produce NaN"
            for b, length in enumerate(lengths):
                if length == 0:
                    continue
                alone = module(x[b : b + 1][is_token[b : b + 1]].unsqueeze(0))
                torch.testing.assert_close(padded[b][is_token[b]], alone[0])


def test_reference_sdpa_matches_torch_on_left_padding_with_fully_masked_rows():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 3)
    mask = causal_padding_attn_mask(padding_mask([5, 2, 0], T=5, side="left"))
    output, weights = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert (weights[1, :, :3] == 0).all() and (weights[2] == 0).all()  # rows with no key


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: padding_mask([3, -1]), ValueError, ["lengths", "-1"]),
        (lambda: padding_mask([3, 2.5]), TypeError, ["lengths", "float"]),
        (lambda: padding_mask([5], T=4), ValueError, ["5", "T=4"]),
        (lambda: padding_mask([2], side="middle"), ValueError, ["side", "middle"]),
        (lambda: padding_mask([]), TypeError, ["lengths"]),
        (lambda: CausalAttention(3, 2, 6)(torch.ones(2, 4, 3), torch.ones(2, 4)), TypeError,
         ["padding_mask", "boolean", "torch.float32"]),
        (lambda: CausalAttention(3, 2, 6)(torch.ones(2, 4, 3), torch.ones(2, 5, dtype=torch.bool)),
         ValueError, ["padding_mask", "(2, 4)", "(2, 5)"]),
        (lambda: MultiHeadAttention(3, 2, 6, 0.0, 2)(torch.ones(2, 4, 3),
                                                     torch.ones(4, dtype=torch.bool)),
         ValueError, ["padding_mask", "2 dimensions", "(4)"]),
        (lambda: key_padding_attn_mask(torch.ones(2, 3)), TypeError, ["padding_mask", "boolean"]),
        (lambda: position_ids(torch.ones(2, 3)), TypeError, ["padding_mask", "boolean"]),
        (lambda: position_ids(torch.ones(3, dtype=torch.bool)), ValueError,
         ["padding_mask", "2 dimensions", "(3)"]),
    ],
)
def test_bad_padding_input_gets_a_message_naming_the_argument(call, error, words):
    assert_error_names(call, error, words)


def test_padding_helpers_leave_their_inputs_unchanged():
    is_token = padding_mask([2, 3], T=3)
    copy = is_token.clone()
    causal_padding_attn_mask(is_token)
    position_ids(is_token)
    x = torch.randn(2, 3, 3)
    x_copy = x.clone()
    CausalAttention(3, 2, 6)(x, is_token)
    assert torch.equal(is_token, copy) and torch.equal(x, x_copy)


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=4),
       side=st.sampled_from(["right", "left"]))
def test_position_ids_count_the_real_tokens_from_0_on_either_side(lengths, side):
    is_token = padding_mask(lengths, 6, side=side)
    ids = position_ids(is_token)
    assert ids.shape == (len(lengths), 6) and ids.dtype == torch.int64
    for b, length in enumerate(lengths):
        assert ids[b][is_token[b]].tolist() == list(range(length))  # as arange when alone
        assert (ids[b][~is_token[b]] == 0).all()


def test_position_ids_make_left_padding_agree_with_each_sequence_alone():
    """With learned absolute position embeddings, arange(T) shifts a left-padded sequence's
    positions and changes its outputs; the ids from the mask give each sequence its own."""
    T, d_in, lengths = 6, 3, [6, 2, 3]
    torch.manual_seed(0)
    positions = torch.nn.Embedding(T, d_in)
    attention = CausalAttention(d_in, 4, context_length=T)
    x = torch.randn(len(lengths), T, d_in, generator=torch.Generator().manual_seed(1))
    is_token = padding_mask(lengths, T, side="left")
    with torch.no_grad():
        by_arange = attention(x + positions(torch.arange(T)), is_token)
        by_mask = attention(x + positions(position_ids(is_token)), is_token)
        gaps = []
        for b, length in enumerate(lengths):
            alone = attention((x[b][is_token[b]] + positions(torch.arange(length)))[None])[0]
            torch.testing.assert_close(by_mask[b][is_token[b]], alone)
            gaps.append((by_arange[b][is_token[b]] - alone).abs().max().item())
    assert gaps[0] == 0.0 and min(gaps[1:]) > 1e-3  # only the padded sequences move
