"""Notebook 5: every head's weights side by side."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import numpy as np

from helpers.attention import (
    causal_mask,
)
from helpers.attention.demos import head_split_problem, multi_head_weights
from helpers.data import TOKENS, example_inputs
from helpers.plotting import FIGURE_WIDTH, TEXT_SIZE, TITLE_SIZE, Heatmap, new_figure
from helpers.widgets.explorer import (
    CONTROL_STYLE,
    FigureExplorer,
    closes_the_one_before,
)

# Orders of the running example's tokens offered by the multi-head explorer. Under a causal
# mask the order decides who can see whom, so each order gives other pictures.
SEQUENCE_ORDERS = {
    "running example": (0, 1, 2, 3, 4, 5),
    "reversed": (5, 4, 3, 2, 1, 0),
    "shuffled": (3, 0, 5, 1, 4, 2),
}


@dataclass(frozen=True)
class MultiHeadView:
    """What the multi-head explorer shows: one panel per head, or none (and a notice)
    when d_out cannot be split among the heads."""

    weights: np.ndarray  # (H, T, T) every head's causal weights; (0, T, T) for no split
    token_labels: tuple  # (T,) the tokens in the sequence's order
    heading: str
    notice: str = ""  # why there is no panel, and what to choose instead


def multi_head_view(sequence: str, num_heads: int, d_out: int, new_weights: int, *,
                    seed: int = 123, weight_std: float = 2.0) -> MultiHeadView:
    """The causal weights of every head of a MultiHeadAttention(3, d_out, H) built with
    seed ``seed + new_weights`` (the clicks of the button), query and key weights of
    spread ``weight_std`` (``helpers.attention.multi_head_weights``), on the running
    example in the order ``SEQUENCE_ORDERS[sequence]``. A d_out that H does not divide
    gives no weights and a notice that says why."""
    order = list(SEQUENCE_ORDERS[sequence])
    labels = tuple(TOKENS[i] for i in order)
    weights_seed = seed + new_weights
    problem = head_split_problem(d_out, num_heads)
    if problem:  # said in the widget and in the picture, with no panel to misread
        return MultiHeadView(
            weights=np.zeros((0, len(order), len(order))), token_labels=labels,
            heading=(f"H = {num_heads}, d_out = {d_out}: no multi-head split\n"
                     f"(projection seed {weights_seed}, shown once d_out fits)"),
            notice=problem)
    weights = multi_head_weights(example_inputs()[order], d_out, num_heads, seed=weights_seed,
                                 weight_std=weight_std).numpy()
    return MultiHeadView(
        weights=weights, token_labels=labels,
        heading=(f"{sequence}: H = {num_heads} heads, each of head_dim = d_out / H = "
                 f"{d_out} / {num_heads} = {d_out // num_heads}\n"
                 f"(grey: the masked future; projection seed {weights_seed})"))


class MultiHeadDrawing:
    """``max_heads`` heatmaps side by side, one per head, with one colour bar; a view with
    fewer heads shows the first H and greys out the others, each saying it is not used
    (so that no control changes the figure's layout). The heading above says how d_out
    is split. At FIGURE_WIDTH the panels show the weights as colours, without numbers,
    which would not fit in their cells."""

    def __init__(self, max_heads: int):
        T = len(TOKENS)
        self.mask = causal_mask(T).numpy()
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 3.3), layout="constrained")
        axes = self.figure.subplots(1, max_heads, squeeze=False)
        # The rows are the same tokens in every panel: named once, in the first.
        zeros = np.zeros((T, T))
        self.heatmaps = [Heatmap(ax, zeros, mask=self.mask, row_labels=TOKENS if h == 0 else
                                 [""] * T, col_labels=TOKENS, title=f"head {h}",
                                 annotate=False)
                         for h, ax in enumerate(axes[0])]
        for ax in axes[0, 1:]:
            ax.set_ylabel("")
        for ax in axes[0]:  # said once for every panel, below them: less text to draw
            ax.set_xlabel("")
        self.figure.supxlabel("key (attended to)", fontsize=TEXT_SIZE)
        colorbar = self.figure.colorbar(self.heatmaps[0].image, ax=axes[0].tolist(),
                                        shrink=0.85)
        colorbar.set_label("attention weight", fontsize=TEXT_SIZE)
        colorbar.ax.tick_params(labelsize=TEXT_SIZE)
        self.heading = self.figure.suptitle(" \n ", fontsize=TITLE_SIZE)
        # A panel with no head to show is greyed out and says so, in its middle.
        self.unused_notes = [ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center",
                                     va="center", fontsize=TEXT_SIZE)
                             for ax in axes[0]]
        # Laid out once and kept, whichever H the first picture shows.
        self.figure.get_layout_engine().execute(self.figure)
        self.figure.set_layout_engine("none")
        # What draw changes, and each panel's frame, drawn over its cells. The panels'
        # titles never change.
        self.animated = [*(artist for heatmap in self.heatmaps
                           for artist in (*heatmap.artists(), *heatmap.ax.spines.values())),
                         *self.unused_notes, self.heading]

    def draw(self, view: MultiHeadView):
        num_heads = len(view.weights)
        T = len(view.token_labels)
        for h, (heatmap, note) in enumerate(zip(self.heatmaps, self.unused_notes, strict=True)):
            heatmap.set_token_labels(view.token_labels if h == 0 else None, view.token_labels)
            if h < num_heads:
                heatmap.update(view.weights[h], mask=self.mask)
                note.set_text("")
            else:  # every cell grey, as masked
                heatmap.update(np.zeros((T, T)), mask=np.zeros((T, T), dtype=bool))
                note.set_text(f"not used\nwith H = {num_heads}" if num_heads else "no split")
        self.heading.set_text(view.heading)
        return view.token_labels  # the tick labels: the only change of layout


@closes_the_one_before
def multi_head_explorer(seed: int = 123, max_heads: int = 4, max_d_out: int = 12,
                        weight_std: float = 2.0) -> FigureExplorer:
    """Notebook 05: the causal weights of every head, side by side.

    Controls: the sequence (the running example in one of the orders of
    ``SEQUENCE_ORDERS``), the number of heads H, d_out, and a button that draws new
    weights. The weights come from a MultiHeadAttention built with seed ``seed`` + the
    number of clicks, its query and key weights drawn with spread ``weight_std``
    (``helpers.attention.multi_head_weights``), so a setting always gives the same picture.
    ``max_heads`` panels are drawn once; a change updates the first H and greys out the
    others. A d_out that H does not divide is answered with a notice in the widget.
    """
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
    return FigureExplorer(controls, partial(multi_head_view, seed=seed, weight_std=weight_std),
                          MultiHeadDrawing(max_heads))
