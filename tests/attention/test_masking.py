"""The two causal-masking strategies (helpers.attention.masking) and attention_weights with
a mask: the reference weights, agreement with PyTorch, and the errors a learner meets."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import (
    attention_weights,
    causal_mask,
    masked_weights_by_neg_inf,
    masked_weights_by_renormalising,
)
from tests.reference import REFERENCE_MASKED_WEIGHTS, running_example_scores

STRATEGIES = [masked_weights_by_renormalising, masked_weights_by_neg_inf]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_both_strategies_reproduce_the_reference_weights(strategy):
    weights = strategy(running_example_scores())
    torch.testing.assert_close(weights, REFERENCE_MASKED_WEIGHTS, atol=5e-5, rtol=0)


@st.composite
def scores_case(draw):
    """Random leading dimensions, T_q, T_k, dtype and scale of the scores."""
    leading = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    T_q, T_k = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    spread = draw(st.floats(0.1, 5.0))
    scores = torch.randn(*leading, T_q, T_k, generator=generator, dtype=dtype) * spread
    return scores, generator


@settings(max_examples=200, deadline=None)
@given(scores_case())
def test_the_strategies_agree_with_each_other_and_with_torch_is_causal(case):
    scores, _ = case
    renormalised = masked_weights_by_renormalising(scores)
    neg_inf = masked_weights_by_neg_inf(scores)
    torch.testing.assert_close(renormalised, neg_inf)
    # torch's weights: with the identity as values, its output is the weights matrix.
    # scale=1 because these are scores already; a zero key makes every query @ key.T zero,
    # so we feed the scores in through the query and an identity key instead.
    T_q, T_k = scores.shape[-2:]
    eye = torch.eye(T_k, dtype=scores.dtype).expand(*scores.shape[:-2], T_k, T_k)
    expected = F.scaled_dot_product_attention(scores, eye, eye, is_causal=True, scale=1.0)
    torch.testing.assert_close(neg_inf, expected)
    torch.testing.assert_close(renormalised, expected)
    assert torch.all(neg_inf.triu(1) == 0)
    torch.testing.assert_close(neg_inf.sum(-1), torch.ones(scores.shape[:-1], dtype=scores.dtype))


@settings(max_examples=200, deadline=None)
@given(scores_case(), st.floats(0.0, 1.0), st.booleans())
def test_any_boolean_mask_matches_attention_weights_and_torch(case, keep, one_row_all_masked):
    scores, generator = case
    mask = torch.rand(scores.shape, generator=generator) < keep
    if one_row_all_masked:
        mask[..., 0, :] = False
    T_k = scores.shape[-1]
    eye = torch.eye(T_k, dtype=scores.dtype).expand(*scores.shape[:-2], T_k, T_k)
    expected = F.scaled_dot_product_attention(scores, eye, eye, attn_mask=mask, scale=1.0)
    reference = attention_weights(scores, eye, attn_mask=mask, scale=1.0)
    for strategy in STRATEGIES:
        weights = strategy(scores, mask)
        torch.testing.assert_close(weights, expected)
        torch.testing.assert_close(weights, reference)
        assert torch.all(weights[~mask] == 0)


def test_a_mask_broadcasts_over_batch_and_heads():
    scores = torch.randn(2, 3, 5, 5)  # (B, H, T, T)
    for strategy in STRATEGIES:
        torch.testing.assert_close(strategy(scores, causal_mask(5)), strategy(scores))


def test_default_mask_is_top_left_aligned_like_torch_when_t_q_differs_from_t_k():
    scores = torch.randn(3, 5)
    expected_mask = torch.ones(3, 5, dtype=torch.bool).tril()
    for strategy in STRATEGIES:
        torch.testing.assert_close(strategy(scores), strategy(scores, expected_mask))


def test_a_row_with_no_allowed_key_gets_zeros_not_nan():
    scores = torch.randn(3, 3)
    mask = causal_mask(3)
    mask[1] = False
    for strategy in STRATEGIES:
        weights = strategy(scores, mask)
        assert torch.equal(weights[1], torch.zeros(3))
        assert not weights.isnan().any()


def test_renormalising_fails_where_a_blocked_score_dominates_and_neg_inf_does_not():
    # The first softmax runs over every key: a blocked score far above the allowed one
    # pushes the allowed weight to 0, and 0 / 0 is NaN.
    scores = torch.tensor([[0.0, 200.0], [0.0, 0.0]])
    assert torch.isnan(masked_weights_by_renormalising(scores)[0]).all()
    torch.testing.assert_close(masked_weights_by_neg_inf(scores)[0], torch.tensor([1.0, 0.0]))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_strategies_leave_their_inputs_unchanged(strategy):
    scores = torch.randn(2, 4, 4)
    mask = torch.rand(4, 4) > 0.4
    scores_copy, mask_copy = scores.clone(), mask.clone()
    strategy(scores, mask)
    strategy(scores)
    assert torch.equal(scores, scores_copy) and torch.equal(mask, mask_copy)


def test_gradients_reach_only_the_allowed_scores():
    # With -inf the blocked scores are cut out of the graph: their gradient is exactly 0.
    scores = torch.randn(4, 4, requires_grad=True)
    masked_weights_by_neg_inf(scores)[:, 0].sum().backward()
    assert torch.all(scores.grad.triu(1) == 0)
    # Renormalising, they take part in the first softmax and cancel out only up to rounding.
    scores.grad = None
    masked_weights_by_renormalising(scores)[:, 0].sum().backward()
    torch.testing.assert_close(scores.grad.triu(1), torch.zeros(4, 4), atol=1e-6, rtol=0)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(
    "scores, mask, error, words",
    [
        (torch.ones(3, 3), torch.ones(4, 4, dtype=torch.bool),
         ValueError, ["mask", "(4, 4)", "scores", "(3, 3)", "[:T_query, :T_key]"]),
        (torch.ones(3, 3), torch.ones(2, 3, 3, dtype=torch.bool),
         ValueError, ["mask", "(2, 3, 3)", "(3, 3)"]),
        (torch.ones(3, 3), torch.ones(3, 3).tril(),
         TypeError, ["mask", "boolean", "torch.float32", ".bool()"]),
        (torch.ones(3, 3), torch.ones(3, 3, dtype=torch.long),
         TypeError, ["mask", "boolean", "torch.int64"]),
        (torch.ones(3, 3), [[True]], TypeError, ["mask", "torch.Tensor", "list"]),
        (torch.ones(3, 3), torch.ones(3, dtype=torch.bool),
         ValueError, ["mask", "at least 2 dimensions", "(3)"]),
        (torch.ones(3), None, ValueError, ["scores", "at least 2 dimensions", "(3)"]),
        (torch.ones(3, 3, dtype=torch.long), None,
         TypeError, ["scores", "floating-point", "torch.int64"]),
    ],
)
def test_bad_input_gets_a_message_naming_the_argument(strategy, scores, mask, error, words):
    with pytest.raises(error) as raised:
        strategy(scores, mask)
    message = str(raised.value)
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"
