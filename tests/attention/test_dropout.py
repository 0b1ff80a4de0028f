"""Dropout on attention weights (helpers.attention.attention_dropout): the same draws as
torch's dropout, the scaling, and the errors a learner meets."""

import pytest
import torch
import torch.nn.functional as F

from helpers.attention import (
    attention_dropout,
)
from tests.errors import assert_error_names
from tests.reference import causal_example_weights


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.7, 1.0])
def test_same_seed_same_result_as_torch_dropout(p):
    weights = torch.softmax(torch.randn(2, 3, 40, 40), dim=-1)
    torch.manual_seed(123)
    expected = F.dropout(weights, p, training=True)
    torch.manual_seed(123)
    dropped, _ = attention_dropout(weights, p)
    assert torch.equal(dropped, expected)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_kept_entries_are_scaled_by_one_over_one_minus_p(p):
    weights = torch.rand(200, 50) + 0.01  # no zeros: a dropped entry is then 0 for sure
    dropped, keep = attention_dropout(weights, p, generator=torch.Generator().manual_seed(1))
    assert keep.dtype == torch.bool and keep.shape == weights.shape
    torch.testing.assert_close(dropped[keep], weights[keep] / (1 - p))
    assert torch.all(dropped[~keep] == 0)
    # 10,000 coins: the kept fraction is within 5 standard deviations of 1 - p.
    tolerance = 5 * (p * (1 - p) / weights.numel()) ** 0.5
    assert abs(keep.float().mean().item() - (1 - p)) < tolerance


def test_mean_of_many_samples_is_the_weights():
    weights = causal_example_weights()
    samples, _ = attention_dropout(weights.expand(20_000, 6, 6), 0.5,
                                   generator=torch.Generator().manual_seed(0))
    # One sample's entry has standard deviation w * sqrt(p / (1 - p)) <= 1 here.
    torch.testing.assert_close(samples.mean(dim=0), weights, atol=5 / 20_000**0.5, rtol=0)
    assert not torch.allclose(samples[0], weights)


def test_p_zero_is_the_identity_and_p_one_drops_everything():
    weights = torch.softmax(torch.randn(4, 6, 6), dim=-1)
    same, keep_all = attention_dropout(weights, 0)
    assert torch.equal(same, weights) and keep_all.all()
    nothing, keep_none = attention_dropout(weights, 1)
    assert torch.equal(nothing, torch.zeros_like(weights)) and not keep_none.any()


def test_generator_makes_the_result_independent_of_the_global_seed():
    weights = torch.rand(6, 6)
    torch.manual_seed(1)
    first, _ = attention_dropout(weights, 0.5, generator=torch.Generator().manual_seed(7))
    torch.manual_seed(2)
    second, _ = attention_dropout(weights, 0.5, generator=torch.Generator().manual_seed(7))
    assert torch.equal(first, second)


def test_gradients_flow_through_the_kept_weights_only():
    weights = torch.rand(5, 5, requires_grad=True)
    dropped, keep = attention_dropout(weights, 0.5, generator=torch.Generator().manual_seed(3))
    dropped.sum().backward()
    torch.testing.assert_close(weights.grad, keep.float() * 2.0)


def test_helpers_leave_their_inputs_unchanged():
    weights = torch.softmax(torch.randn(3, 6, 6), dim=-1)
    copy = weights.clone()
    for p in (0.0, 0.5, 1.0):
        dropped, _ = attention_dropout(weights, p)
        dropped.zero_()  # changing the result must not change the input either
    assert torch.equal(weights, copy)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: attention_dropout(torch.ones(2, 2), 1.5),
         ValueError, ["p", "between 0 and 1", "1.5"]),
        (lambda: attention_dropout(torch.ones(2, 2), -0.1), ValueError, ["p", "-0.1"]),
        (lambda: attention_dropout(torch.ones(2, 2), "0.5"), TypeError, ["p", "number", "str"]),
        (lambda: attention_dropout(torch.ones(2, 2, dtype=torch.long), 0.5),
         TypeError, ["weights", "floating-point", "torch.int64"]),
        (lambda: attention_dropout([[0.5, 0.5]], 0.5),
         TypeError, ["weights", "torch.Tensor", "list"]),
        (lambda: attention_dropout(torch.tensor(0.5), 0.5), ValueError, ["weights", "at least 1"]),
        (lambda: attention_dropout(torch.ones(2, 2), 0.5, generator=123),
         TypeError, ["generator", "torch.Generator", "int"]),
    ],
)
def test_bad_input_gets_a_message_naming_the_argument(call, error, words):
    assert_error_names(call, error, words)
