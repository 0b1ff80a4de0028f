"""Notebook 1: query, d_k and scaling."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import numpy as np
from matplotlib.patches import Rectangle

from helpers.attention.demos import projected_attention_weights
from helpers.data import TOKENS, example_inputs
from helpers.plotting import FIGURE_WIDTH, TEXT_SIZE, Heatmap, new_figure
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
    closes_the_one_before,
)


@dataclass(frozen=True)
class SelfAttentionView:
    """What the self-attention explorer shows."""

    weights: np.ndarray  # (T, T)
    query: int  # the row outlined and drawn as bars
    heatmap_title: str
    bars_title: str


def self_attention_view(query: int, d_k: int, scaled: bool, *, seed: int = 0):
    """The running example's weights through random query/key projections of width
    ``d_k`` (``projected_attention_weights``), with or without the 1/sqrt(d_k) scaling."""
    weights = projected_attention_weights(example_inputs(), d_k, scaled=scaled,
                                          seed=seed).numpy()
    return SelfAttentionView(
        weights=weights, query=query,
        heatmap_title=(f"d_k = {d_k}, {'scaled' if scaled else 'not scaled'}:\n"
                       f"largest weight {weights.max(-1).mean():.2f} on average"),
        bars_title=f"query '{TOKENS[query]}':\nlargest weight {weights[query].max():.2f}")


class SelfAttentionDrawing:
    """Left, the (T, T) weights with the query's row outlined; right, that row as bars
    beside the uniform weight 1/T."""

    def __init__(self):
        T = len(TOKENS)
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 4.6), layout="constrained")
        heat_ax, self.bar_ax = self.figure.subplots(1, 2, width_ratios=[1.1, 1])
        self.heatmap = Heatmap(heat_ax, np.zeros((T, T)), row_labels=TOKENS, col_labels=TOKENS)
        self.outline = heat_ax.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False,
                                                   edgecolor="red", linewidth=3))
        # The colour scale is fixed (0 to 1, as in every heatmap): the bar is drawn once.
        # Unlabelled: the bars' axis beside it names the same weights on the same scale.
        colorbar = self.figure.colorbar(self.heatmap.image, ax=heat_ax, shrink=0.8)
        colorbar.ax.tick_params(labelsize=TEXT_SIZE)
        self.figure.get_layout_engine().set(wspace=0.08)  # the bars' axis label apart
        self.bars = self.bar_ax.bar(range(T), np.zeros(T), color="tab:blue")
        self.bar_ax.set_xticks(range(T), labels=TOKENS, rotation=45, ha="right")
        self.bar_ax.tick_params(labelsize=TEXT_SIZE)
        self.bar_ax.set_ylim(0, 1)
        self.bar_ax.set_ylabel("attention weight", fontsize=TEXT_SIZE)
        # The dashed line is named in the axis label, where no bar can cover its name.
        self.bar_ax.set_xlabel(f"key   (dashed line: uniform weight 1/{T})", fontsize=TEXT_SIZE)
        uniform = self.bar_ax.axhline(1 / T, color="grey", linestyle="--")
        # What draw changes, and what is drawn over it: the dashed line over the bars,
        # each panel's frame over its cells and bars.
        self.animated = [*self.heatmap.artists(), self.outline, heat_ax.title, *self.bars,
                         uniform, self.bar_ax.title, *heat_ax.spines.values(),
                         *self.bar_ax.spines.values()]

    def draw(self, view: SelfAttentionView):
        self.heatmap.update(view.weights)
        self.heatmap.ax.set_title(view.heatmap_title)
        self.outline.set_y(view.query - 0.5)
        for bar, height in zip(self.bars, view.weights[view.query], strict=True):
            bar.set_height(height)
        self.bar_ax.set_title(view.bars_title)


@closes_the_one_before
def self_attention_explorer(seed: int = 0) -> FigureExplorer:
    """Notebook 01: how scaling by sqrt(d_k) keeps the softmax from saturating.

    Controls: the query token, d_k (the width of the random query/key projections) and
    whether the scores are divided by sqrt(d_k). Left, the (6, 6) weights with the chosen
    query's row outlined; right, that row as bars.
    """
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
    return FigureExplorer(controls, partial(self_attention_view, seed=seed),
                          SelfAttentionDrawing())
