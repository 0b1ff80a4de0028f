"""Every figure the course shows can be read from the back of a room and on a laptop (the
measure: tests/type_scale.py). Here plot_attention's figures; every explorer's, after
every step of its walk: tests/widgets/test_explorer_walk.py."""

import numpy as np
import pytest
import torch

from helpers.attention import causal_mask
from helpers.data import TOKENS
from helpers.plotting import attention_heatmaps, plot_attention
from tests.figures import shown_cell_labels
from tests.type_scale import REFERENCE_DPI, drawn_texts, scales, too_small


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
    figure, (heatmap,) = attention_heatmaps(np.full((2, 2), 0.5), titles=["a title"])
    assert any(what.startswith("cell labels") for what, _ in drawn_texts(figure))
    figure.set_size_inches(8.5, 4)
    ax = heatmap.ax
    ax.set_title("a title", fontsize=10)
    assert any("'a title'" in problem for problem in too_small(figure, REFERENCE_DPI))
    ax.set_title("a title", fontsize=20)
    for labels in shown_cell_labels(figure):
        labels.set_sizes([6 ** 2])  # 6 pt
    assert any(problem.startswith("cell labels") for problem in too_small(figure, 100))
    # a figure twice the column's width shows its text at half size there
    assert scales(figure, 200)["notebook column"] == pytest.approx(0.5)
