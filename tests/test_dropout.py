"""Dropout on attention weights: helpers.attention.attention_dropout and running_mean
against torch's dropout, and the dropout explorer driven headlessly."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.attention import (
    SelfAttention,
    attention_dropout,
    attention_weights,
    causal_mask,
    running_mean,
)
from helpers.data import example_inputs
from helpers.widgets import DROPOUT_SAMPLE_COUNTS, dropout_explorer


def causal_example_weights():
    torch.manual_seed(789)
    module = SelfAttention(d_in=3, d_out=2)
    x = example_inputs()
    return attention_weights(module.W_query(x), module.W_key(x), is_causal=True).detach()


# ---------------------------------------------------------------- the maths


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


def test_running_mean_is_the_mean_of_the_first_n_samples():
    samples = torch.randn(7, 3, 2, dtype=torch.float64)
    means = running_mean(samples)
    assert means.shape == samples.shape
    for n in range(1, 8):
        torch.testing.assert_close(means[n - 1], samples[:n].mean(dim=0))


def test_helpers_leave_their_inputs_unchanged():
    weights = torch.softmax(torch.randn(3, 6, 6), dim=-1)
    copy = weights.clone()
    for p in (0.0, 0.5, 1.0):
        dropped, _ = attention_dropout(weights, p)
        dropped.zero_()  # changing the result must not change the input either
    running_mean(weights)
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
        (lambda: running_mean(torch.ones(0, 3)), ValueError, ["samples", "(0, 3)"]),
        (lambda: running_mean(torch.ones(3, dtype=torch.int32)),
         TypeError, ["samples", "floating-point", "torch.int32"]),
    ],
)
def test_bad_input_gets_a_message_naming_the_argument(call, error, words):
    with pytest.raises(error) as raised:
        call()
    for word in words:
        assert word in str(raised.value), f"{word!r} missing from: {raised.value}"


# ---------------------------------------------------------------- the explorer


def panels(explorer):
    """The cell values of the four heatmaps: clean, keep mask, one sample, average."""
    return [ax.collections[0].get_array().copy() for ax in explorer.figure.axes[:4]]


def test_explorer_shows_the_sample_its_mask_and_the_running_average():
    weights = causal_example_weights()
    explorer = dropout_explorer(weights, mask=causal_mask(6), seed=5)
    explorer.controls["p"].value = 0.3
    explorer.controls["samples"].value = 20
    assert explorer.last_error is None
    generator = torch.Generator().manual_seed(5)
    n_max = DROPOUT_SAMPLE_COUNTS[-1]
    dropped, keep = attention_dropout(weights.expand(n_max, 6, 6), 0.3, generator=generator)
    clean, keep_panel, sample_panel, mean_panel = panels(explorer)
    np.testing.assert_allclose(clean, weights.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(keep_panel, keep[19].double().numpy())
    np.testing.assert_allclose(sample_panel, dropped[19].numpy(), rtol=1e-6)
    np.testing.assert_allclose(mean_panel, dropped[:20].mean(dim=0).numpy(), rtol=1e-5)
    kept = int(keep[19][causal_mask(6)].sum())
    assert explorer.figure.axes[1].get_title() == f"latest sample: kept {kept} of 21 weights"
    assert explorer.figure.axes[3].get_title() == "average of 20 samples"


def test_every_control_changes_the_picture_in_place():
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    image_artist = explorer.figure.axes[2].collections[0]
    for name in ("p", "samples", "resample"):
        before = explorer.image.value
        if name == "resample":
            explorer.controls[name].click()
        else:
            explorer.controls[name].value = {"p": 0.2, "samples": 100}[name]
        assert explorer.last_error is None
        assert explorer.image.value != before, f"changing {name} left the image as it was"
    assert explorer.figure.axes[2].collections[0] is image_artist


def test_average_approaches_the_weights_with_more_samples():
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    weights = panels(explorer)[0]
    error = {}
    for n in (1, DROPOUT_SAMPLE_COUNTS[-1]):
        explorer.controls["samples"].value = n
        error[n] = np.abs(panels(explorer)[3] - weights).max()
    assert error[DROPOUT_SAMPLE_COUNTS[-1]] < 0.05 < error[1]


def test_explorer_handles_p_zero_and_p_one():
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    weights = panels(explorer)[0]
    explorer.controls["p"].value = 0.0
    assert explorer.last_error is None
    np.testing.assert_allclose(panels(explorer)[2], weights, rtol=1e-6)
    assert "nothing is dropped" in explorer.figure.texts[0].get_text()
    explorer.controls["p"].value = 1.0
    assert explorer.last_error is None
    assert not panels(explorer)[2].any() and not panels(explorer)[3].any()
    assert "every weight is dropped" in explorer.figure.texts[0].get_text()
    assert "kept 0 of 21" in explorer.figure.axes[1].get_title()


def test_explorer_leaves_the_weights_unchanged():
    weights = causal_example_weights()
    copy = weights.clone()
    explorer = dropout_explorer(weights, mask=causal_mask(6))
    explorer.controls["p"].value = 0.9
    assert torch.equal(weights, copy)


@pytest.mark.parametrize("p, top_label", [(0.5, "2.00"), (0.75, "4.00"), (0.9, "10.00"),
                                          (1.0, "1.00")])
def test_colour_bar_of_the_dropped_sample_follows_its_scale(p, top_label):
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    explorer.controls["p"].value = p
    assert explorer.last_error is None
    top = explorer.figure.axes[2].collections[0].get_clim()[1]
    assert top == pytest.approx(1.0 if p == 1.0 else 1 / (1 - p))
    bar_ax = next(ax for ax in explorer.figure.axes if ax.get_ylabel() == "weight after dropout")
    # The bar spans 0 to 1; the texts beside its ticks label it on the panel's scale.
    labels = [text.get_text() for text in bar_ax.texts]
    assert labels[0] == "0.00" and labels[-1] == top_label, labels
    assert [label.get_text() for label in bar_ax.get_yticklabels()] == [""] * len(labels)
    assert [text.get_position()[1] for text in bar_ax.texts] == list(bar_ax.get_yticks())
    assert all(float(label) == pytest.approx(top * tick)
               for label, tick in zip(labels, bar_ax.get_yticks(), strict=True))
