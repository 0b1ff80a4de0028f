"""Notebook 01's explorer (helpers.widgets.self_attention) and
projected_attention_weights."""

import numpy as np
import torch

from helpers.attention.demos import projected_attention_weights
from helpers.data import example_inputs
from helpers.widgets.self_attention import self_attention_explorer


def heatmap_array(explorer):
    return explorer.drawing.heatmap.image.get_array().copy()


def test_heatmap_shows_the_model_and_updates_in_place():
    explorer = self_attention_explorer(seed=3)
    image_artist = explorer.drawing.heatmap.image
    explorer.controls["d_k"].value = 64
    explorer.controls["scaled"].value = False
    expected = projected_attention_weights(example_inputs(), 64, scaled=False, seed=3).numpy()
    np.testing.assert_allclose(heatmap_array(explorer), expected, rtol=1e-6)
    assert explorer.drawing.heatmap.image is image_artist
    assert image_artist in explorer.figure.findobj()  # still the one drawn


def test_query_control_moves_the_outline_and_the_bars():
    explorer = self_attention_explorer()
    explorer.controls["query"].value = 5
    assert explorer.drawing.outline.get_y() == 4.5
    bars = [bar.get_height() for bar in explorer.drawing.bars]
    np.testing.assert_allclose(bars, heatmap_array(explorer)[5], rtol=1e-6)


def test_the_view_is_computed_without_a_figure_and_is_what_is_drawn():
    from helpers.widgets.self_attention import self_attention_view

    view = self_attention_view(query=2, d_k=16, scaled=False, seed=3)
    expected = projected_attention_weights(example_inputs(), 16, scaled=False, seed=3).numpy()
    np.testing.assert_allclose(view.weights, expected, rtol=1e-6)
    assert view.bars_title == f"query 'starts':\nlargest weight {expected[2].max():.2f}"
    assert "d_k = 16, not scaled" in view.heatmap_title
    explorer = self_attention_explorer(seed=3)
    for name, value in [("query", 2), ("d_k", 16), ("scaled", False)]:
        explorer.controls[name].value = value
    assert np.array_equal(explorer.view.weights, view.weights)
    assert (explorer.view.query, explorer.view.bars_title) == (view.query, view.bars_title)
    np.testing.assert_allclose(heatmap_array(explorer), view.weights, rtol=1e-6)
    assert explorer.drawing.bar_ax.get_title() == view.bars_title


def test_projected_weights_saturate_without_scaling_and_repeat():
    """What notebook 01 measures: random projections of width d_k, scaled or not."""
    x = example_inputs()
    scaled = projected_attention_weights(x, 512, scaled=True)
    unscaled = projected_attention_weights(x, 512, scaled=False)
    assert unscaled.max(-1).values.mean() > scaled.max(-1).values.mean() + 0.2
    torch.testing.assert_close(projected_attention_weights(x, 8), projected_attention_weights(x, 8))
