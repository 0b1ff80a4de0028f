"""Notebook 5: every head's weights side by side."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from helpers.attention import (
    causal_mask,
    head_split_problem,
    multi_head_weights,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import Heatmap
from helpers.widgets.explorer import (
    CONTROL_STYLE,
    FigureExplorer,
)

# Orders of the running example's tokens offered by the multi-head explorer. Under a causal
# mask the order decides who can see whom, so each order gives other pictures.
SEQUENCE_ORDERS = {
    "running example": (0, 1, 2, 3, 4, 5),
    "reversed": (5, 4, 3, 2, 1, 0),
    "shuffled": (3, 0, 5, 1, 4, 2),
}


def multi_head_explorer(seed: int = 123, max_heads: int = 4, max_d_out: int = 12,
                        weight_std: float = 2.0) -> FigureExplorer:
    """Notebook 05: the causal weights of every head, side by side.

    Controls: the sequence (the running example in one of the orders of
    ``SEQUENCE_ORDERS``), the number of heads H, d_out, and a button that draws new
    weights. The weights come from a MultiHeadAttention built with seed ``seed`` + the
    number of clicks, its query and key weights drawn with spread ``weight_std``
    (``helpers.attention.multi_head_weights``), so a setting always gives the same picture.
    ``max_heads`` panels are drawn once; a change updates the first H and hides the
    others. A d_out that H does not divide is answered with a message in the widget.
    """
    inputs = example_inputs()
    T = len(TOKENS)
    mask = causal_mask(T).numpy()
    controls = {
        "sequence": widgets.Dropdown(
            options=list(SEQUENCE_ORDERS), value="running example", description="sequence",
            style=CONTROL_STYLE, layout=widgets.Layout(width="auto", min_width="240px")),
        "num_heads": widgets.IntSlider(
            value=max_heads, min=1, max=max_heads, description="heads H", continuous_update=False,
            style=CONTROL_STYLE, layout=widgets.Layout(width="auto", min_width="220px")),
        "d_out": widgets.IntSlider(
            value=max_d_out, min=1, max=max_d_out, description="d_out", continuous_update=False,
            style=CONTROL_STYLE, layout=widgets.Layout(width="auto", min_width="220px")),
        "new_weights": widgets.Button(description="draw new weights", icon="refresh"),
    }
    figure, axes = plt.subplots(1, max_heads, figsize=(2.45 * max_heads + 1.0, 3.5),
                                layout="constrained", squeeze=False)
    plt.close(figure)
    # The rows are the same tokens in every panel: named once, in the first.
    heatmaps = [Heatmap(ax, np.zeros((T, T)), mask=mask, row_labels=TOKENS if h == 0 else [""] * T,
                        col_labels=TOKENS, title=f"head {h}")
                for h, ax in enumerate(axes[0])]
    for ax in axes[0, 1:]:
        ax.set_ylabel("")
    figure.colorbar(heatmaps[0].image, ax=axes[0].tolist(), shrink=0.85,
                    label="attention weight")
    heading = figure.suptitle(" ")
    # Lay out with every panel shown, so that hiding some later leaves the others in place.
    figure.draw_without_rendering()
    figure.set_layout_engine("none")

    def redraw(sequence, num_heads, d_out, new_weights):
        problem = head_split_problem(d_out, num_heads)
        if problem:  # say so in the widget and in the picture, with no panel to misread
            for heatmap in heatmaps:
                heatmap.ax.set_visible(False)
            heading.set_text(f"H = {num_heads}, d_out = {d_out}: no multi-head split   "
                             f"(weights seed {seed + new_weights}, shown once d_out fits)")
            return problem
        order = list(SEQUENCE_ORDERS[sequence])
        labels = [TOKENS[i] for i in order]
        weights = multi_head_weights(inputs[order], d_out, num_heads, seed=seed + new_weights,
                                     weight_std=weight_std).numpy()
        for h, heatmap in enumerate(heatmaps):
            heatmap.ax.set_visible(h < num_heads)
            if h < num_heads:
                heatmap.update(weights[h], mask=mask)
                heatmap.set_token_labels(labels if h == 0 else None, labels)
        heading.set_text(f"{sequence}: H = {num_heads} heads, each of head_dim = d_out / H = "
                         f"{d_out} / {num_heads} = {d_out // num_heads}   "
                         f"(grey: the masked future; weights seed {seed + new_weights})")

    return FigureExplorer(controls, figure, redraw)
