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
from helpers.widgets.dropout import CURVE_COUNTS, ERROR_FLOOR, dropout_view


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

N_MAX = DROPOUT_SAMPLE_COUNTS[-1]


def reference_samples(weights, p, seed):
    """What the explorer draws: every sample at once, from a generator seeded with seed."""
    return attention_dropout(weights.expand(N_MAX, *weights.shape), p,
                             generator=torch.Generator().manual_seed(seed))


def test_view_shows_the_sample_its_mask_and_the_running_average():
    weights, mask = causal_example_weights(), causal_mask(6)
    view = dropout_view(0.3, 20, 0, weights=weights, mask=mask, seed=5)
    dropped, keep = reference_samples(weights, 0.3, 5)
    np.testing.assert_array_equal(view.keep, keep[19].numpy())
    np.testing.assert_allclose(view.dropped, dropped[19].numpy(), rtol=1e-6)
    np.testing.assert_allclose(view.mean, dropped[:20].mean(dim=0).numpy(), rtol=1e-5)
    kept = int(keep[19][mask].sum())
    assert view.keep_title == f"sample 20 of 20: kept {kept} of 21 weights"
    assert view.dropped_title == "sample 20 after dropout"
    assert view.mean_title == "average of 20 samples"
    expected_text = np.where(mask, np.where(keep[19], "kept", "drop"), "")
    np.testing.assert_array_equal(view.keep_text, expected_text)
    assert set(view.keep_text[~mask.numpy()]) == {""}
    # The error curve: the largest difference of the running average from the weights.
    errors = (running_mean(dropped) - weights).abs().amax(dim=(-2, -1)).numpy()
    np.testing.assert_array_equal(view.counts, CURVE_COUNTS)
    assert view.counts[0] == 1 and view.counts[-1] == N_MAX
    np.testing.assert_allclose(view.errors, errors[CURVE_COUNTS - 1], rtol=1e-6)
    assert view.error == pytest.approx(errors[19])
    assert view.error_title == f"after 20 samples: max |average − weights| = {errors[19]:.4f}"


def test_view_of_a_resample_is_a_fresh_draw_from_the_next_seed():
    weights, mask = causal_example_weights(), causal_mask(6)
    first = dropout_view(0.5, 50, 0, weights=weights, mask=mask, seed=5)
    again = dropout_view(0.5, 50, 0, weights=weights, mask=mask, seed=5)
    resampled = dropout_view(0.5, 50, 2, weights=weights, mask=mask, seed=5)
    np.testing.assert_array_equal(first.mean, again.mean)
    assert not np.array_equal(first.mean, resampled.mean)
    np.testing.assert_array_equal(
        resampled.mean, dropout_view(0.5, 50, 0, weights=weights, mask=mask, seed=7).mean)


def test_view_without_a_mask_counts_every_entry():
    weights = torch.softmax(torch.randn(3, 5, generator=torch.Generator().manual_seed(0)), -1)
    view = dropout_view(0.5, 1, 0, weights=weights)
    assert "" not in set(view.keep_text.ravel())
    assert view.keep_title.endswith(f"kept {int(view.keep.sum())} of 15 weights")


@pytest.mark.parametrize("p, top", [(0.0, 1.0), (0.15000000000000002, 1 / 0.85), (0.5, 2.0),
                                    (0.9, 10.0), (1.0, 1.0)])
def test_view_scale_heading_and_trend_follow_p(p, top):
    weights, mask = causal_example_weights(), causal_mask(6)
    view = dropout_view(p, 10, 0, weights=weights, mask=mask)
    assert view.p == round(p, 2)
    assert view.scale_top == pytest.approx(top)
    assert view.dropped.max() <= top + 1e-6
    if 0.0 < p < 1.0:
        spread = weights.max().item() * (p / (1 - p)) ** 0.5
        np.testing.assert_allclose(view.guide, spread / np.sqrt(CURVE_COUNTS), rtol=1e-6)
        assert view.guide_shown
        assert view.heading == (f"p = {p:.2f}: each weight is kept with probability "
                                f"{1 - p:.2f}; kept weights are multiplied by 1/(1 − p) = "
                                f"{1 / (1 - p):.2f}")
    else:
        assert not view.guide_shown


def test_view_at_p_zero_changes_nothing_and_at_p_one_drops_everything():
    weights, mask = causal_example_weights(), causal_mask(6)
    nothing = dropout_view(0.0, 10, 0, weights=weights, mask=mask)
    np.testing.assert_allclose(nothing.dropped, weights.numpy(), rtol=1e-6)
    assert nothing.errors.max() < 1e-6  # 0 but for the rounding of the running mean
    assert "nothing is dropped" in nothing.heading
    assert nothing.error_title.endswith("(nothing dropped: always 0)")
    everything = dropout_view(1.0, 10, 0, weights=weights, mask=mask)
    assert not everything.dropped.any() and not everything.mean.any()
    assert "every weight is dropped" in everything.heading
    assert "kept 0 of 21" in everything.keep_title
    assert everything.error == pytest.approx(weights.max().item())


def test_view_average_approaches_the_weights_with_more_samples():
    weights, mask = causal_example_weights(), causal_mask(6)
    error = {n: np.abs(dropout_view(0.5, n, 0, weights=weights, mask=mask).mean
                       - weights.numpy()).max() for n in (1, N_MAX)}
    assert error[N_MAX] < 0.05 < error[1]


def test_the_drawing_shows_the_view():
    weights = causal_example_weights()
    explorer = dropout_explorer(weights, mask=causal_mask(6), seed=5)
    drawing = explorer.drawing
    np.testing.assert_allclose(drawing.clean_map.image.get_array(), weights.numpy(), rtol=1e-6)
    for name, value in [("p", 0.3), ("samples", 20), ("resample", None), ("p", 0.0)]:
        if value is None:
            explorer.controls[name].click()
        else:
            explorer.controls[name].value = value
        assert explorer.last_error is None
        view = explorer.view
        assert (view.p, view.samples) == (explorer.controls["p"].value,
                                          explorer.controls["samples"].value)
        np.testing.assert_array_equal(drawing.keep_map.image.get_array(), view.keep)
        np.testing.assert_array_equal(drawing.keep_map.cell_text, view.keep_text)
        np.testing.assert_allclose(drawing.dropped_map.image.get_array(), view.dropped)
        np.testing.assert_allclose(drawing.mean_map.image.get_array(), view.mean)
        assert drawing.dropped_map.image.get_clim() == (0.0, view.scale_top)
        for heatmap, title in [(drawing.keep_map, view.keep_title),
                               (drawing.dropped_map, view.dropped_title),
                               (drawing.mean_map, view.mean_title)]:
            assert heatmap.ax.get_title() == title
        assert drawing.error_ax.get_title() == view.error_title
        np.testing.assert_array_equal(drawing.error_line.get_xdata(), view.counts)
        np.testing.assert_allclose(drawing.error_line.get_ydata(),
                                   np.maximum(view.errors, ERROR_FLOOR))
        assert list(drawing.marker.get_xdata()) == [view.samples]
        assert list(drawing.marker.get_ydata()) == [max(view.error, ERROR_FLOOR)]
        np.testing.assert_allclose(drawing.guide_line.get_ydata(), view.guide)
        assert drawing.guide_line.get_visible() == view.guide_shown
        assert explorer.figure.get_suptitle() == view.heading


def test_every_control_changes_the_picture_in_place():
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    image_artist = explorer.drawing.dropped_map.image
    for name in ("p", "samples", "resample"):
        before = explorer.image.value
        if name == "resample":
            explorer.controls[name].click()
        else:
            explorer.controls[name].value = {"p": 0.2, "samples": 100}[name]
        assert explorer.last_error is None
        assert explorer.image.value != before, f"changing {name} left the image as it was"
    assert explorer.drawing.dropped_map.image is image_artist
    assert image_artist in explorer.figure.axes[2].collections


def test_only_a_change_of_p_redraws_the_whole_figure():
    """The colour bar's tick labels change with p and need a full draw; nothing else does."""
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    for name in explorer.controls:
        explorer.step(name)
    draws = explorer.renderer.full_draws
    for _ in range(3):
        explorer.step("samples")
        explorer.step("resample")
    assert explorer.renderer.full_draws == draws
    explorer.step("p")
    assert explorer.renderer.full_draws == draws + 1


def test_explorer_leaves_the_weights_and_the_global_random_state_unchanged():
    weights = causal_example_weights()
    copy = weights.clone()
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    explorer = dropout_explorer(weights, mask=causal_mask(6))
    explorer.controls["p"].value = 0.9
    explorer.controls["resample"].click()
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(weights, copy)


def test_explorer_uses_the_running_example_without_weights():
    explorer = dropout_explorer()
    np.testing.assert_allclose(explorer.drawing.clean_map.image.get_array(),
                               causal_example_weights().numpy(), rtol=1e-6)
    assert explorer.view.keep_title.endswith("of 21 weights")


@pytest.mark.parametrize("p, top", [(0.5, 2.0), (0.75, 4.0), (0.9, 10.0), (1.0, 1.0)])
def test_colour_bar_of_the_dropped_sample_shows_its_scale(p, top):
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    explorer.controls["p"].value = p
    assert explorer.last_error is None
    bar = explorer.drawing.dropped_bar
    assert bar.mappable is explorer.drawing.dropped_map.image
    assert bar.ax.get_ylabel() == "weight after dropout"
    assert bar.ax.get_ylim() == pytest.approx((0.0, top))
    # Real tick labels, on the sample's scale: from 0 up to near the top.
    ticks = [tick for tick in bar.get_ticks() if 0.0 <= tick <= top]
    labels = [label.get_text() for label in bar.ax.get_yticklabels()]
    assert len(ticks) >= 3 and ticks[0] == 0.0 and ticks[-1] > top / 2
    numbers = [float(label.replace("−", "-")) for label in labels if label]
    assert max(numbers) == pytest.approx(ticks[-1])
