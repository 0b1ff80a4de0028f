"""Every figure the course shows can be read from the back of a room and on a laptop.

A figure is shown as a PNG of its pixel size (inches x dpi), scaled down where it does not
fit: in JupyterLab to the notebook column, about 850 px wide on a 1280 x 800 laptop with
the file browser open; on a 1280 x 720 slide to about 1180 px of width and the slide's
720 px of height. Text of ``size`` pt drawn at ``dpi`` is then seen as large as text of

    size x dpi / 100 x scale   pt

drawn at matplotlib's 100 dpi and shown at its pixel size; the smallest text of every
figure must be seen at 11 pt or more in both places. Measured here: every visible,
non-empty text artist (titles, tick and axis labels, legends, annotations) and the
heatmaps' cell labels (``helpers.plotting.CellLabels``, drawn as outlines, found by their
gid).
"""

import matplotlib.text
import numpy as np
import pytest
import torch

from helpers.attention import causal_mask
from helpers.data import TOKENS
from helpers.plotting import plot_attention
from tests.figures import cell_label_size, cell_labels_written, shown_cell_labels
from tools.course import explorers
from tools.explorer_step import step

SMALLEST_SIZE = 11  # pt, as seen
REFERENCE_DPI = 100  # matplotlib's: 11 pt at 100 dpi is about 15 px
COLUMN_WIDTH = 850  # px: a notebook column on a laptop
SLIDE_WIDTH, SLIDE_HEIGHT = 1180, 720  # px: the most a 1280 x 720 slide shows unscaled
# px: an explorer's static picture shares its slide with its two lines of code
# ("explorer = ..._explorer()", "explorer.picture()"): 92 px in the exported deck as
# Chromium lays it out (a 630 px picture made a 722 px screen), 8 px spare; the live
# explorer's controls take about as much.
EXPLORER_PICTURE_HEIGHT = SLIDE_HEIGHT - 100


def scales(figure, dpi: float) -> dict:
    """How much smaller than drawn the figure is seen, in each place it is shown."""
    width, height = figure.get_size_inches() * dpi
    return {"notebook column": min(1.0, COLUMN_WIDTH / width),
            "slide": min(1.0, SLIDE_WIDTH / width, SLIDE_HEIGHT / height)}


def drawn_texts(figure) -> list:
    """(what, size in pt) of every text the figure shows."""
    texts = []
    for artist in figure.findobj(matplotlib.text.Text):
        if not artist.get_visible() or not artist.get_text().strip():
            continue
        if artist.axes is not None and not artist.axes.get_visible():
            continue
        texts.append((repr(artist.get_text()), artist.get_fontsize()))
    for labels in shown_cell_labels(figure):
        if cell_labels_written(labels):
            where = labels.axes.get_title() if labels.axes is not None else ""
            texts.append((f"cell labels of {where!r}", cell_label_size(labels)))
    return texts


def too_small(figure, dpi: float) -> list:
    """Every text seen smaller than SMALLEST_SIZE, where and how large it is seen."""
    found = []
    for place, scale in scales(figure, dpi).items():
        for what, size in drawn_texts(figure):
            seen = size * dpi / REFERENCE_DPI * scale
            if seen < SMALLEST_SIZE - 1e-6:
                found.append(f"{what}: {size:g} pt seen at {seen:.1f} pt in the {place}")
    return found


def explorer_cases() -> list:
    return [pytest.param(factory, id=name) for name, factory in explorers().items()]


@pytest.mark.parametrize("factory", explorer_cases())
def test_every_explorer_text_is_readable_in_a_notebook_and_on_a_slide(factory):
    explorer = factory()
    figure = explorer.figure
    assert drawn_texts(figure), "found no text to measure"
    assert too_small(figure, figure.dpi) == []  # the dpi its renderer draws it at
    # after a change as well as at first: titles and captions change with the controls
    for name in explorer.controls:
        step(explorer, name)
        assert explorer.last_error is None
        assert too_small(figure, figure.dpi) == []


@pytest.mark.parametrize("factory", explorer_cases())
def test_every_explorer_picture_fits_a_slide_below_its_code(factory):
    explorer = factory()
    width, height = explorer.figure.get_size_inches() * explorer.figure.dpi
    assert height <= EXPLORER_PICTURE_HEIGHT
    assert width <= COLUMN_WIDTH


def plot_attention_cases():
    """plot_attention as the notebooks call it: one (T, T) matrix, two heads or two
    sequences side by side, a batch of three sequences."""
    T = len(TOKENS)
    weights = torch.softmax(torch.randn(3, T, T), dim=-1)
    mask = causal_mask(T)
    two_lines = "Causal attention weights\n(grey: masked, the future)"
    return {
        "one matrix": lambda: plot_attention(weights[0], labels=TOKENS, titles=[two_lines]),
        "one masked matrix": lambda: plot_attention(weights[0], mask=mask, labels=TOKENS,
                                                    titles=[two_lines]),
        "two heads": lambda: plot_attention(
            weights[:2], mask=mask, labels=TOKENS, value_range=(0.0, 2.0),
            titles=["No dropout", "After dropout, p = 0.5 (one draw)"],
            colorbar_label="attention weight (kept ones ×2 after dropout)"),
        "three sequences": lambda: plot_attention(
            weights, mask=torch.rand(3, T, T) > 0.3,
            titles=[f"sequence {b}: {'Your journey starts'!r}" for b in range(3)]),
    }


@pytest.mark.parametrize("case", list(plot_attention_cases()))
def test_every_plot_attention_text_is_readable_in_a_notebook_and_on_a_slide(case):
    figure = plot_attention_cases()[case]()
    assert drawn_texts(figure), "found no text to measure"
    assert too_small(figure, REFERENCE_DPI) == []


def test_the_measure_finds_small_text_and_cell_labels():
    """The check above can fail: small text and small cell labels are both caught."""
    figure = plot_attention(np.full((2, 2), 0.5), titles=["a title"])
    assert any(what.startswith("cell labels") for what, _ in drawn_texts(figure))
    figure.set_size_inches(8.5, 4)
    ax = figure.heatmaps[0].ax
    ax.set_title("a title", fontsize=10)
    assert any("'a title'" in problem for problem in too_small(figure, REFERENCE_DPI))
    ax.set_title("a title", fontsize=20)
    for labels in shown_cell_labels(figure):
        labels.set_sizes([6 ** 2])  # 6 pt
    assert any(problem.startswith("cell labels") for problem in too_small(figure, 100))
    # a figure twice the column's width shows its text at half size there
    assert scales(figure, 200)["notebook column"] == pytest.approx(0.5)
