"""plot_attention and Heatmap: what is drawn, not only that something is."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba

from helpers.attention import attention_weights, causal_mask
from helpers.plotting import (
    MASKED_COLOUR,
    NAN_COLOUR,
    Heatmap,
    figure_to_png,
    plot_attention,
)


def test_image_holds_the_weights_on_a_fixed_scale():
    weights = torch.softmax(torch.randn(5, 5), dim=-1)
    fig = plot_attention(weights, labels=list("abcde"))
    heatmap = fig.heatmaps[0]
    np.testing.assert_allclose(heatmap.image.get_array(), weights.numpy(), rtol=1e-6)
    assert heatmap.image.get_clim() == (0.0, 1.0)
    assert [t.get_text() for t in heatmap.ax.get_yticklabels()] == list("abcde")
    assert heatmap.texts[2][3].get_text() == f"{weights[2, 3].item():.2f}"
    assert figure_to_png(fig).startswith(b"\x89PNG")


def test_masked_and_nan_cells_are_marked_apart_from_small_weights():
    weights = attention_weights(torch.randn(4, 2), torch.randn(4, 2), is_causal=True)
    weights[3] = float("nan")
    fig = plot_attention(weights, mask=causal_mask(4))
    heatmap = fig.heatmaps[0]
    overlay = heatmap.overlay.get_array()
    assert tuple(overlay[0, 1]) == to_rgba(MASKED_COLOUR)  # masked: grey, opaque
    assert tuple(overlay[3, 0]) == to_rgba(NAN_COLOUR)  # NaN row: orange
    assert overlay[1, 0, 3] == 0.0  # an allowed weight shows the colour scale through
    assert heatmap.texts[0][1].get_text() == "" and heatmap.texts[3][2].get_text() == "NaN"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["masked", "NaN"]


@pytest.mark.parametrize(
    "shape, grid", [((6, 6), (1, 1)), ((3, 4, 4), (1, 3)), ((2, 2, 3, 5), (2, 2))])
def test_accepts_one_matrix_heads_and_batches(shape, grid):
    weights = torch.rand(shape)
    fig = plot_attention(weights)
    assert len(fig.heatmaps) == grid[0] * grid[1]
    last = fig.heatmaps[-1].image.get_array()
    np.testing.assert_allclose(last, weights.reshape(-1, *shape[-2:])[-1].numpy(), rtol=1e-6)


def test_annotates_small_matrices_only():
    assert plot_attention(torch.rand(8, 8)).heatmaps[0].texts
    assert not plot_attention(torch.rand(9, 9)).heatmaps[0].texts


def test_update_changes_the_same_artists():
    fig = plot_attention(torch.zeros(3, 3))
    heatmap = fig.heatmaps[0]
    image = heatmap.image
    heatmap.update(torch.eye(3))
    assert heatmap.image is image
    np.testing.assert_array_equal(image.get_array(), np.eye(3))
    with pytest.raises(ValueError, match="changed shape"):
        heatmap.update(torch.eye(4))


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"weights": torch.rand(6)}, ValueError, ["weights", "2 or 3 or 4", "(6)"]),
        ({"weights": "abc"}, TypeError, ["weights", "torch.Tensor", "str"]),
        ({"weights": torch.rand(3, 3) > 0.5}, TypeError, ["weights", "boolean"]),
        ({"weights": torch.rand(3, 3), "mask": torch.ones(3, 3)}, TypeError, ["mask", "boolean"]),
        ({"weights": torch.rand(3, 3), "mask": torch.ones(4, 4, dtype=torch.bool)},
         ValueError, ["mask", "(4, 4)", "(3, 3)"]),
        ({"weights": torch.rand(3, 3), "labels": ["a", "b"]}, ValueError, ["row_labels", "3", "2"]),
    ],
)
def test_bad_input_is_named(kwargs, error, words):
    with pytest.raises(error) as raised:
        plot_attention(**kwargs)
    for word in words:
        assert word in str(raised.value)


def test_plotting_leaves_the_tensor_unchanged():
    weights = torch.rand(2, 4, 4)
    weights[0, 1, 1] = float("nan")
    copy = weights.clone()
    plot_attention(weights)
    assert torch.equal(weights.isnan(), copy.isnan())
    assert torch.equal(weights.nan_to_num(), copy.nan_to_num())


def test_each_cell_is_drawn_at_its_row_and_column_in_its_colour():
    weights = torch.zeros(3, 4)
    weights[0, 2] = 1.0  # top row, third key: the top colour of the scale
    fig = plot_attention(weights, annotate=False)
    heatmap = fig.heatmaps[0]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())
    height = pixels.shape[0]
    for (row, column), value in (((0, 2), 1.0), ((2, 1), 0.0), ((0, 0), 0.0)):
        x, y = heatmap.ax.transData.transform((column, row))  # cell centres: (j, i)
        colour = pixels[round(height - y), round(x)] / 255
        expected = heatmap.image.cmap(heatmap.image.norm(value))
        np.testing.assert_allclose(colour, expected, atol=2 / 255)
    assert heatmap.ax.get_ylim() == (2.5, -0.5)  # row 0 at the top


def test_update_marks_both_layers_changed():
    fig = plot_attention(torch.zeros(3, 3), mask=causal_mask(3))
    FigureCanvasAgg(fig).draw()
    heatmap = fig.heatmaps[0]
    assert not heatmap.image.stale and not heatmap.overlay.stale
    heatmap.update(torch.eye(3), mask=causal_mask(3).T)
    assert heatmap.image.stale and heatmap.overlay.stale  # a renderer redraws them


def test_token_labels_are_set_only_when_they_change():
    fig = plot_attention(torch.zeros(3, 3), labels=["a", "b", "c"])
    heatmap = fig.heatmaps[0]
    FigureCanvasAgg(fig).draw()
    heatmap.set_token_labels(["a", "b", "c"], ["a", "b", "c"])
    assert not heatmap.ax.xaxis.stale and not heatmap.ax.yaxis.stale
    heatmap.set_token_labels(None, ["c", "b", "a"])
    assert [t.get_text() for t in heatmap.ax.get_xticklabels()] == ["c", "b", "a"]
    assert [t.get_text() for t in heatmap.ax.get_yticklabels()] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="expected 3 token labels for the rows, got 2"):
        heatmap.set_token_labels(["a", "b"])


def test_changing_labels_are_texts_where_tick_labels_would_be():
    labels, widest = ["0:a", "1:bb", "2:pad"], "0:journey"
    tick_fig, tick_ax = plt.subplots(figsize=(3, 3))
    Heatmap(tick_ax, np.zeros((3, 3)), row_labels=labels, col_labels=labels)
    text_fig, text_ax = plt.subplots(figsize=(3, 3))
    heatmap = Heatmap(text_ax, np.zeros((3, 3)), row_labels=labels, col_labels=labels,
                      widest_label=widest)
    for fig in (tick_fig, text_fig):
        FigureCanvasAgg(fig).draw()
    renderer = text_fig.canvas.get_renderer()
    assert [t.get_text() for t in text_ax.get_xticklabels()] == [""] * 3
    for side, axis in (("rows", tick_ax.yaxis), ("columns", tick_ax.xaxis)):
        texts = heatmap.label_texts[side]
        assert [text.get_text() for text in texts] == labels
        for text, tick_label in zip(texts, axis.get_ticklabels(), strict=True):
            np.testing.assert_allclose(text.get_window_extent(renderer).extents,
                                       tick_label.get_window_extent().extents, atol=1)

    heatmap.set_token_labels([widest] * 3, [widest] * 3)  # new labels: texts, not the axes
    assert not text_ax.xaxis.stale and not text_ax.yaxis.stale
    assert all(text.stale for texts in heatmap.label_texts.values() for text in texts)
    FigureCanvasAgg(text_fig).draw()
    renderer = text_fig.canvas.get_renderer()
    for side, title in (("rows", text_ax.yaxis.label), ("columns", text_ax.xaxis.label)):
        title_extent = title.get_window_extent(renderer)
        for text in heatmap.label_texts[side]:
            assert not title_extent.overlaps(text.get_window_extent(renderer)), side
    plt.close(tick_fig)
    plt.close(text_fig)
