"""Notebook 1: query, d_k and scaling."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from helpers.attention import (
    projected_attention_weights,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import Heatmap
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
)


def self_attention_explorer(seed: int = 0) -> FigureExplorer:
    """Notebook 01: how scaling by sqrt(d_k) keeps the softmax from saturating.

    Controls: the query token, d_k (the width of the random query/key projections) and
    whether the scores are divided by sqrt(d_k). Left, the (6, 6) weights with the chosen
    query's row outlined; right, that row as bars.
    """
    x = example_inputs()
    T = len(TOKENS)
    controls = {
        "query": widgets.Dropdown(
            options=[(f"{i}: {token}", i) for i, token in enumerate(TOKENS)], value=1,
            description="query token", style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
        "d_k": widgets.SelectionSlider(
            options=[2 ** n for n in range(1, 11)], value=2, description="d_k (query/key size)",
            continuous_update=True, style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
        "scaled": widgets.Checkbox(
            value=True, description="divide the scores by √d_k", indent=False,
            style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
    }
    figure, (heat_ax, bar_ax) = plt.subplots(
        1, 2, figsize=(10, 4.2), layout="constrained", gridspec_kw={"width_ratios": [1.1, 1]})
    plt.close(figure)
    heatmap = Heatmap(heat_ax, np.zeros((T, T)), row_labels=TOKENS, col_labels=TOKENS)
    outline = heat_ax.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False, edgecolor="red",
                                          linewidth=3))
    bars = bar_ax.bar(range(T), np.zeros(T), color="tab:blue")
    bar_ax.set_xticks(range(T), labels=TOKENS, rotation=45, ha="right")
    bar_ax.set_ylim(0, 1)
    bar_ax.set_ylabel("attention weight")
    # The dashed line is named in the axis label, where no bar can cover its name.
    bar_ax.set_xlabel(f"key   (dashed line: uniform weight 1/{T})")
    bar_ax.axhline(1 / T, color="grey", linestyle="--")

    def redraw(query, d_k, scaled):
        weights = projected_attention_weights(x, d_k, scaled=scaled, seed=seed).numpy()
        heatmap.update(weights)
        heat_ax.set_title(f"d_k = {d_k}, {'scaled' if scaled else 'not scaled'}: "
                          f"largest weight {weights.max(-1).mean():.2f} on average")
        outline.set_y(query - 0.5)
        for bar, height in zip(bars, weights[query], strict=True):
            bar.set_height(height)
        bar_ax.set_title(f"query '{TOKENS[query]}': largest weight {weights[query].max():.2f}")

    return FigureExplorer(controls, figure, redraw)
