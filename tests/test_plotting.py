"""plot_attention, Heatmap and plot_distributions: what is drawn, not only that something
is."""

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextPath

from helpers.attention import attention_weights, causal_mask
from helpers.plotting import (
    MASKED_COLOUR,
    NAN_COLOUR,
    TEXT_SIZE,
    CellLabels,
    Heatmap,
    attention_heatmaps,
    centred_text_path,
    figure_description,
    ink_box,
    new_figure,
    plot_attention,
    plot_distributions,
)
from tests.figures import cell_label_size, figure_to_png, layout_problems, shown_cell_labels


def test_image_holds_the_weights_on_a_fixed_scale():
    weights = torch.softmax(torch.randn(5, 5), dim=-1)
    fig, (heatmap, *_) = attention_heatmaps(weights, labels=list("abcde"))
    np.testing.assert_allclose(heatmap.image.get_array(), weights.numpy(), rtol=1e-6)
    assert heatmap.image.get_clim() == (0.0, 1.0)
    assert [t.get_text() for t in heatmap.ax.get_yticklabels()] == list("abcde")
    assert heatmap.cell_text[2, 3] == f"{weights[2, 3].item():.2f}"
    assert figure_to_png(fig).startswith(b"\x89PNG")


def test_masked_and_nan_cells_are_marked_apart_from_small_weights():
    weights = attention_weights(torch.randn(4, 2), torch.randn(4, 2), is_causal=True)
    weights[3] = float("nan")
    fig, (heatmap, *_) = attention_heatmaps(weights, mask=causal_mask(4))
    overlay = heatmap.overlay.get_array()
    assert tuple(overlay[0, 1]) == to_rgba(MASKED_COLOUR)  # masked: grey, opaque
    assert tuple(overlay[3, 0]) == to_rgba(NAN_COLOUR)  # NaN row: orange
    assert overlay[1, 0, 3] == 0.0  # an allowed weight shows the colour scale through
    assert heatmap.cell_text[0, 1] == "" and heatmap.cell_text[3, 2] == "NaN"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["masked", "NaN"]


@pytest.mark.parametrize(
    "shape, grid", [((6, 6), (1, 1)), ((3, 4, 4), (1, 3)), ((2, 2, 3, 5), (2, 2))])
def test_accepts_one_matrix_heads_and_batches(shape, grid):
    weights = torch.rand(shape)
    _, heatmaps = attention_heatmaps(weights)
    assert len(heatmaps) == grid[0] * grid[1]
    last = heatmaps[-1].image.get_array()
    np.testing.assert_allclose(last, weights.reshape(-1, *shape[-2:])[-1].numpy(), rtol=1e-6)


def test_annotates_small_matrices_only():
    assert attention_heatmaps(torch.rand(8, 8))[1][0].cell_text.all()
    assert not attention_heatmaps(torch.rand(9, 9))[1][0].cell_text.any()


def test_update_changes_the_same_artists():
    fig, (heatmap, *_) = attention_heatmaps(torch.zeros(3, 3))
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
        ({"weights": torch.rand(2, 3, 3), "labels": [list("abc")]}, ValueError,
         ["row_labels", "one list of token names per heatmap (2)", "1 lists"]),
        ({"weights": torch.rand(2, 3, 3), "col_labels": [list("abc"), list("ab")]}, ValueError,
         ["col_labels", "3 tokens", "got 2"]),
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
    fig, (heatmap, *_) = attention_heatmaps(weights, annotate=False)
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


def test_each_heatmap_can_name_its_own_tokens():
    _, heatmaps = attention_heatmaps(torch.rand(2, 3, 3), labels=[list("abc"), list("cba")])
    for heatmap, expected in zip(heatmaps, ["abc", "cba"], strict=True):
        assert [t.get_text() for t in heatmap.ax.get_yticklabels()] == list(expected)
        assert [t.get_text() for t in heatmap.ax.get_xticklabels()] == list(expected)


def test_token_labels_are_set_only_when_they_change():
    fig, (heatmap, *_) = attention_heatmaps(torch.zeros(3, 3), labels=["a", "b", "c"])
    FigureCanvasAgg(fig).draw()
    heatmap.set_token_labels(["a", "b", "c"], ["a", "b", "c"])
    assert not heatmap.ax.xaxis.stale and not heatmap.ax.yaxis.stale
    heatmap.set_token_labels(None, ["c", "b", "a"])
    assert [t.get_text() for t in heatmap.ax.get_xticklabels()] == ["c", "b", "a"]
    assert [t.get_text() for t in heatmap.ax.get_yticklabels()] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="expected 3 token labels for the rows, got 2"):
        heatmap.set_token_labels(["a", "b"])


def ink(fig) -> np.ndarray:
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].astype(int)


def test_cell_texts_are_drawn_centred_in_their_cells_in_a_readable_colour():
    fig, ax = plt.subplots(figsize=(3, 3))
    plt.close(fig)
    weights = np.array([[0.05, 0.95], [0.5, 0.2]])
    heatmap = Heatmap(ax, weights)
    heatmap.update(weights, cell_text=np.full((2, 2), ""))
    without = ink(fig)
    texts = np.array([["", "kept"], ["", ""]], dtype=object)
    heatmap.update(weights, cell_text=texts)
    assert list(heatmap.cell_text.ravel()) == ["", "kept", "", ""]
    changed = np.abs(ink(fig) - without).max(-1) > 0
    rows, columns = np.nonzero(changed)
    height = changed.shape[0]
    x, y = ax.transData.transform((1, 0))  # the centre of cell (row 0, column 1)
    assert abs((columns.min() + columns.max()) / 2 - x) <= 1.5
    assert abs((rows.min() + rows.max()) / 2 - (height - y)) <= 3  # centred on digits' middle
    assert (columns.max() - columns.min()) < ax.transData.transform((1.5, 0))[0] - x + \
        (x - ax.transData.transform((0.5, 0))[0])  # inside its cell
    # Dark text on the light (yellow) cell of 0.95, white on the dark cell of 0.05.
    heatmap.update(weights)
    colours = heatmap.cell_labels.collection.get_facecolor()
    assert tuple(colours[1][:3]) == (0.0, 0.0, 0.0) and tuple(colours[0][:3]) == (1.0, 1.0, 1.0)


def test_cell_text_of_the_wrong_shape_is_named():
    fig, ax = plt.subplots()
    plt.close(fig)
    heatmap = Heatmap(ax, np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"expected \(2, 3\) cell texts, got shape \(3, 2\)"):
        heatmap.update(np.zeros((2, 3)), cell_text=[["a", "b"]] * 3)


def test_cell_labels_are_drawn_at_their_size_in_points_and_found_by_their_gid():
    ink_heights = {}
    for size in (11, 22):
        fig = new_figure(figsize=(2, 2), dpi=100)
        ax = fig.subplots()
        ax.set(xlim=(-0.5, 0.5), ylim=(0.5, -0.5))
        ax.set_axis_off()  # nothing black but the label
        labels = CellLabels(ax, 1, 1, fontsize=size)
        labels.set([["0"]], [["black"]])
        assert labels.fontsize == size
        assert shown_cell_labels(fig) == [labels.collection]
        assert cell_label_size(labels.collection) == size
        rows = np.nonzero((ink(fig)[..., 0] < 128).any(axis=1))[0]  # black on white
        ink_heights[size] = rows.max() - rows.min() + 1
        expected = centred_text_path("0", size).get_extents().height * 100 / 72  # pt -> px
        assert abs(ink_heights[size] - expected) <= 2, (size, ink_heights[size], expected)
    assert ink_heights[22] > 1.8 * ink_heights[11]
    fig, heatmaps = attention_heatmaps(torch.rand(2, 3, 3))
    assert shown_cell_labels(fig) == [heatmap.cell_labels.collection for heatmap in heatmaps]
    assert {cell_label_size(labels) for labels in shown_cell_labels(fig)} == {TEXT_SIZE}
    heatmaps[1].ax.set_visible(False)
    assert shown_cell_labels(fig) == [heatmaps[0].cell_labels.collection]


@pytest.mark.parametrize("text", [f"{value:.2f}" for value in np.linspace(0, 1, 101)]
                         + ["NaN", "-inf", "−∞", "✓", "✗", "×", "1e-08",
                            "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"])
def test_a_glyph_outlines_box_is_the_box_matplotlib_computes_for_its_ink(text):
    """ink_box (the box of the outline's points) centres cell labels in place of
    ``get_extents`` (exact, from every curve's extremes): the same box, for every string
    a cell can show and every letter."""
    outline = TextPath((0, 0), text, prop=FontProperties(size=1))
    extents = outline.get_extents()
    assert np.allclose(ink_box(outline), ((extents.xmin, extents.ymin),
                                          (extents.xmax, extents.ymax)), atol=1e-9)


def test_an_unchanged_string_keeps_its_outline():
    first = centred_text_path("0.25", 9)
    assert centred_text_path("0.25", 9) is first
    assert centred_text_path("0.25", 12) is not first
    assert len(centred_text_path("", 9).vertices) == 0


def test_the_colour_bar_says_what_it_shows():
    _, (default, *_) = attention_heatmaps(torch.rand(3, 3))
    assert default.image.colorbar.ax.get_ylabel() == "attention weight"
    _, (dropped, *_) = attention_heatmaps(torch.rand(3, 3) * 2, value_range=(0.0, 2.0),
                                          colorbar_label="attention weight after dropout")
    colour_bar = dropped.image.colorbar.ax
    assert colour_bar.get_ylabel() == "attention weight after dropout"
    assert colour_bar.get_ylim() == (0.0, 2.0)


def test_a_figure_is_described_by_its_label_or_else_by_what_its_panels_show():
    from helpers.plotting import figure_description, new_figure, plot_attention

    figure = plot_attention(torch.softmax(torch.randn(3, 3), dim=-1))
    description = figure_description(figure)
    assert description.startswith("2 panels: a heatmap")
    assert "query (attending) against key (attended to)" in description
    assert "a colour bar for attention weight" in description
    bars = new_figure()
    ax = bars.subplots()
    ax.bar([0, 1], [1, 2])
    ax.set_title("row sums")
    bars.suptitle("Two bars")
    assert figure_description(bars) == "Two bars. One panel: bars titled 'row sums'."
    bars.set_label("Row sums of the weights: each is 1.")
    assert figure_description(bars) == "Row sums of the weights: each is 1."
    assert figure_description(new_figure()) == "An empty figure."


def test_a_long_title_does_not_run_under_the_colour_bar():
    from helpers.plotting import plot_attention
    from tests.figures import layout_problems

    title = "Untrained SelfAttention: almost uniform\nevery weight in [0.15, 0.19], 1/T = 0.17"
    figure = plot_attention(torch.full((6, 6), 1 / 6), labels=list("abcdef"), titles=[title])
    assert layout_problems(figure) == []


def test_distributions_are_bars_one_panel_each_that_read_and_say_what_they_show():
    logits = torch.randn(16, generator=torch.Generator().manual_seed(0)) * 2
    kept = torch.where(logits >= logits.topk(3).values[-1], torch.softmax(logits, -1), 0.0)
    distributions = {"temperature 1": torch.softmax(logits, -1), "top-k 3": kept / kept.sum()}
    before = {name: p.clone() for name, p in distributions.items()}
    figure = plot_distributions(distributions, list("abcdefghijklmnop"), title="next letter")
    top, bottom = figure.axes
    assert [ax.get_title() for ax in figure.axes] == ["temperature 1: 16 of 16 possible",
                                                      "top-k 3: 3 of 16 possible"]
    heights = [bar.get_height() for bar in bottom.patches]
    assert np.allclose(heights, distributions["top-k 3"].numpy())
    texts = [text.get_text() for text in bottom.texts]
    assert texts == [f"{kept.max() / kept.sum():.2f}"]
    assert [label.get_text() for label in bottom.get_xticklabels()] == list("abcdefghijklmnop")
    largest = float(kept.max() / kept.sum())  # the top-k panel's largest bar, the largest
    assert top.get_ylim() == bottom.get_ylim() and bottom.get_ylim()[1] > largest
    assert layout_problems(figure) == []
    assert figure_description(figure).startswith("next letter. 2 panels: bars titled")
    assert all(torch.equal(before[name], distributions[name]) for name in before)


def test_distributions_on_their_own_scales_with_marked_tokens_read():
    logits = torch.randn(16, generator=torch.Generator().manual_seed(0)) * 2
    distributions = {"temperature 1": torch.softmax(logits, -1),
                     "temperature 2": torch.softmax(logits / 2, -1)}
    figure = plot_distributions(distributions, list("abcdefghijklmnop"), shared_scale=False,
                                marked=list("bcde"), marked_label="cannot come next")
    for ax, probabilities in zip(figure.axes, distributions.values(), strict=True):
        largest = float(probabilities.max())
        assert ax.get_ylim()[1] == pytest.approx(1.45 * largest)  # its own scale
        bars = ax.patches
        grey = [bar for bar in bars if bar.get_hatch()]
        assert [bars.index(bar) for bar in grey] == [1, 2, 3, 4]  # b to e
        assert all(bar.get_facecolor() != to_rgba("tab:blue") for bar in grey)
    top, bottom = figure.axes
    assert top.get_ylim() != bottom.get_ylim()
    [legend] = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == ["cannot come next"]
    assert layout_problems(figure) == []


@pytest.mark.parametrize("keywords, words", [
    ({"marked": ["z"], "marked_label": "x"}, "marked must name tokens among the labels"),
    ({"marked": ["a"]}, "marked_label must say what the marked bars are"),
])
def test_marked_tokens_that_cannot_be_drawn_are_named(keywords, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        plot_distributions({"p": torch.tensor([0.5, 0.5])}, list("ab"), **keywords)


@pytest.mark.parametrize("distributions, labels, words", [
    ({}, list("ab"), "non-empty dict"),
    ({"p": torch.tensor([0.5, 0.5])}, list("abc"), "labels must name every token"),
    ({"p": torch.tensor([0.5, 0.5]), "q": torch.ones(3) / 3}, list("ab"), "sizes [2, 3]"),
    ({"p": torch.tensor([1.5, -0.5])}, list("ab"), "between 0 and 1"),
    ({"p": torch.ones(2, 2) / 4}, list("ab"), "distributions['p']"),
])
def test_distributions_that_cannot_be_drawn_are_named(distributions, labels, words):
    with pytest.raises((TypeError, ValueError), match=re.escape(words)):
        plot_distributions(distributions, labels)
