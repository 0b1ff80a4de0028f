"""Notebook 03's explorer (helpers.widgets.dropout): running_mean, the view computed without
a figure, the drawing, the controls."""

import numpy as np
import pytest
import torch

from helpers.attention import (
    attention_dropout,
    causal_mask,
)
from helpers.attention.demos import running_mean
from helpers.plotting import weight_texts
from helpers.widgets.dropout import (
    CURVE_COUNTS,
    DROPOUT_SAMPLE_COUNTS,
    ERROR_FLOOR,
    dropout_explorer,
    dropout_view,
)
from tests.errors import assert_error_names
from tests.reference import causal_example_weights
from tests.widgets.support import assert_steps_draw_in_place


def test_running_mean_is_the_mean_of_the_first_n_samples():
    samples = torch.randn(7, 3, 2, dtype=torch.float64)
    means = running_mean(samples)
    assert means.shape == samples.shape
    for n in range(1, 8):
        torch.testing.assert_close(means[n - 1], samples[:n].mean(dim=0))


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
    assert view.dropped_title == f"sample 20 of 20: kept {kept} of 21"
    assert view.mean_title == "average of 20 samples"
    assert view.show == "sample"
    # The error curve: the largest difference of the running average from the weights.
    errors = (running_mean(dropped) - weights).abs().amax(dim=(-2, -1)).numpy()
    np.testing.assert_array_equal(view.counts, CURVE_COUNTS)
    assert view.counts[0] == 1 and view.counts[-1] == N_MAX
    np.testing.assert_allclose(view.errors, errors[CURVE_COUNTS - 1], rtol=1e-6)
    assert view.error == pytest.approx(errors[19])
    assert view.error_title == f"after 20 samples: max |average − weights| = {errors[19]:.4f}"


def test_view_keeps_the_shown_sample_not_all_of_them():
    """Its arrays hold (6, 6) entries each, not views of the 5000 samples drawn: an explorer
    keeps its view, and IPython's output history keeps the explorer."""
    view = dropout_view(0.3, 20, 0, weights=causal_example_weights(), mask=causal_mask(6))
    for array in (view.keep, view.dropped, view.mean):
        tensor = array.base  # the tensor whose memory it shares, if any
        held = tensor.untyped_storage().nbytes() if isinstance(tensor, torch.Tensor) else 0
        assert held <= 36 * array.itemsize


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
    assert view.dropped_title.endswith(f"kept {int(view.keep.sum())} of 15")


@pytest.mark.parametrize("p, top", [(0.0, 1.0), (0.15000000000000002, 1 / 0.85), (0.5, 2.0),
                                    (0.9, 10.0), (1.0, 1.0)])
def test_view_scale_heading_and_trend_follow_p(p, top):
    weights, mask = causal_example_weights(), causal_mask(6)
    view = dropout_view(p, 10, 0, weights=weights, mask=mask)
    assert view.p == round(p, 2)
    assert view.dropped.max() <= top + 1e-6
    if 0.0 < p < 1.0:
        spread = weights.max().item() * (p / (1 - p)) ** 0.5
        np.testing.assert_allclose(view.guide, spread / np.sqrt(CURVE_COUNTS), rtol=1e-6)
        assert view.guide_shown
        assert view.heading == (f"p = {p:.2f}: each weight kept with probability "
                                f"{1 - p:.2f}, kept ones × 1/(1 − p) = "
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
    assert "kept 0 of 21" in everything.dropped_title
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
    for name, value in [("p", 0.3), ("samples", 20), ("resample", None), ("show", "average"),
                        ("p", 0.0), ("show", "sample")]:
        if value is None:
            explorer.controls[name].click()
        else:
            explorer.controls[name].value = value
        assert explorer.last_error is None
        view = explorer.view
        assert (view.p, view.samples, view.show) == (explorer.controls["p"].value,
                                                     explorer.controls["samples"].value,
                                                     explorer.controls["show"].value)
        shown, title = (view.dropped, view.dropped_title) if view.show == "sample" else \
            (view.mean, view.mean_title)
        np.testing.assert_allclose(drawing.shown_map.image.get_array(), shown)
        assert drawing.shown_map.cell_text.tolist() == weight_texts(shown, causal_mask(6)).tolist()
        assert drawing.shown_map.ax.get_title() == title
        assert drawing.error_ax.get_title() == view.error_title
        np.testing.assert_array_equal(drawing.error_line.get_xdata(), view.counts)
        np.testing.assert_allclose(drawing.error_line.get_ydata(),
                                   np.maximum(view.errors, ERROR_FLOOR))
        assert list(drawing.marker.get_xdata()) == [view.samples]
        assert list(drawing.marker.get_ydata()) == [max(view.error, ERROR_FLOOR)]
        np.testing.assert_allclose(drawing.guide_line.get_ydata(), view.guide)
        assert drawing.guide_line.get_visible() == view.guide_shown
        assert explorer.figure.get_suptitle() == view.heading


def test_view_refuses_an_unknown_panel():
    with pytest.raises(ValueError, match="show must be one of"):
        dropout_view(0.5, 1, 0, "both", weights=causal_example_weights())


def test_control_changes_redraw_the_same_heatmap():
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    image_artist = explorer.drawing.shown_map.image
    for name, value in [("p", 0.2), ("samples", 100), ("resample", None),
                        ("show", "average")]:
        if value is None:
            explorer.controls[name].click()
        else:
            explorer.controls[name].value = value
        assert explorer.last_error is None
    assert explorer.drawing.shown_map.image is image_artist
    assert image_artist in explorer.figure.findobj()


def test_no_change_redraws_the_whole_figure_once_every_control_has_moved():
    """Every changing part is blitted: the colour scale and its bar never change."""
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    assert_steps_draw_in_place(explorer)


def test_explorer_leaves_the_weights_it_is_given_unchanged():
    weights = causal_example_weights()
    copy = weights.clone()
    explorer = dropout_explorer(weights, mask=causal_mask(6))
    explorer.controls["p"].value = 0.9
    explorer.controls["resample"].click()
    assert torch.equal(weights, copy)


def test_explorer_uses_the_running_example_without_weights():
    explorer = dropout_explorer()
    np.testing.assert_allclose(explorer.drawing.clean_map.image.get_array(),
                               causal_example_weights().numpy(), rtol=1e-6)
    assert explorer.view.dropped_title.endswith("of 21")


def test_one_colour_bar_serves_both_panels_and_marks_clipped_colours():
    explorer = dropout_explorer(causal_example_weights(), mask=causal_mask(6))
    explorer.controls["p"].value = 0.5  # kept weights x 2: above the scale's top
    drawing = explorer.drawing
    (bar,) = [ax for ax in explorer.figure.axes
              if ax not in (drawing.clean_map.ax, drawing.shown_map.ax, drawing.error_ax)]
    assert bar.get_ylabel() == "attention weight"
    for heatmap in (drawing.clean_map, drawing.shown_map):
        assert heatmap.image.get_clim() == (0.0, 1.0)
    assert drawing.shown_map.image.get_array().max() > 1.0
    assert "2.00" in drawing.shown_map.cell_text  # the value is written, not clipped


def test_running_mean_names_bad_samples_and_leaves_them_unchanged():
    assert_error_names(lambda: running_mean(torch.ones(0, 3)), ValueError, ["samples", "(0, 3)"])
    assert_error_names(lambda: running_mean(torch.ones(3, dtype=torch.int32)), TypeError,
                       ["samples", "floating-point", "torch.int32"])
    samples = torch.rand(4, 3)
    copy = samples.clone()
    running_mean(samples)
    assert torch.equal(samples, copy)
