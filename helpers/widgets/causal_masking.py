"""Notebook 2: the two causal-masking strategies, step by step."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.patches import Patch, Rectangle

from helpers.attention import (
    attention_scores,
    causal_mask,
    masked_weights_by_neg_inf,
    masked_weights_by_renormalising,
)
from helpers.data import REFERENCE_SEED, TOKENS, example_queries_and_keys
from helpers.plotting import (
    CMAP,
    FIGURE_WIDTH,
    MASKED_COLOUR,
    SCORES_CMAP,
    TEXT_SIZE,
    TITLE_SIZE,
    Heatmap,
    cell_layer,
    new_figure,
    weight_texts,
)
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
    closes_the_one_before,
)

MASKING_STRATEGIES = {
    "renormalise": "1: softmax, zero the future, renormalise",
    "neg_inf": "2: -inf above the diagonal, one softmax",
}
OUTSIDE_COLOUR = (1.0, 1.0, 1.0, 0.85)  # cells of tokens not in the sequence: faded out
# A row sum written upright needs about a third of the bars' axis (0 to 1.05): a shorter
# bar gets its number above it.
LABEL_FITS_IN_BAR = 0.4


def running_example_scores(seed: int = REFERENCE_SEED) -> torch.Tensor:
    """Scaled scores (6, 6) of the running example (``helpers.data.example_queries_and_keys``;
    the default seed gives the reference weights). The global random state is left as it was."""
    return attention_scores(*example_queries_and_keys(seed))  # (T, T)


@dataclass(frozen=True)
class CausalMaskingView:
    """What the causal-masking explorer shows. Every matrix is (6, 6), the full running
    example: rows and columns of tokens beyond T hold 0 and are drawn faded out."""

    strategy: str  # a key of MASKING_STRATEGIES
    T: int  # the sequence length: the first T tokens
    query: int  # the row outlined, worked through in the caption
    inside: np.ndarray  # bool: both tokens are among the first T
    allowed: np.ndarray  # bool: inside, and the key is not after the query
    scores: np.ndarray
    score_text: np.ndarray  # strings: the scores inside T, without the leading zero (".12")
    score_range: tuple  # (-m, m), m the largest |score| of all 36: the scores' colour scale
    middle: np.ndarray  # the step in between; blocked cells hold 0 (strategy 1) or -inf (2)
    middle_text: np.ndarray  # strings: allowed values, then "0" or "-inf" where blocked
    middle_range: tuple  # its colour scale: 0 to 1 (strategy 1), the scores' (strategy 2)
    middle_cmap: str  # the weights' colour map (strategy 1), the scores' (strategy 2)
    middle_title: str
    weights: np.ndarray
    weight_sums: np.ndarray  # (6,) each row's sum (1 inside T, 0 beyond)
    zeroed_sums: np.ndarray  # (6,) each row's sum after zeroing the future (strategy 1)
    weight_sum_texts: tuple  # (6,) the sums written on the bars ("" beyond T)
    zeroed_sum_texts: tuple  # (6,) likewise; all "" for strategy 2, which has no such step
    caption: str


def causal_masking_view(strategy: str, T: int, query: int, *,
                        scores: torch.Tensor) -> CausalMaskingView:
    """Mask the first T tokens' ``scores`` (a (6, 6) tensor) with ``strategy``:
    "renormalise" (softmax over every key, zero the future, divide by what is left) or
    "neg_inf" (-inf above the diagonal, then one softmax). ``query`` is kept below T."""
    T_max = scores.shape[-1]
    query = min(query, T - 1)
    first = scores[:T, :T]  # (T, T): the first T tokens
    mask = causal_mask(T)  # (T, T), True = may attend
    if strategy == "renormalise":
        middle = torch.softmax(first, dim=-1).masked_fill(~mask, 0.0)
        weights = masked_weights_by_renormalising(first, mask)
        blocked_text, middle_title = "0", "softmax over all keys, future × 0"
    elif strategy == "neg_inf":
        middle = first.masked_fill(~mask, float("-inf"))
        weights = masked_weights_by_neg_inf(first, mask)
        blocked_text, middle_title = "-inf", "masked scores, future = -inf"
    else:
        raise ValueError(f"strategy must be one of {list(MASKING_STRATEGIES)}, got {strategy!r}")
    largest = float(scores.abs().max())
    score_range = (-largest, largest)  # centred on 0, the scores' diverging colour map

    def padded(values):  # (T, T) -> (T_max, T_max), zeros beyond T
        full = np.zeros((T_max, T_max))
        full[:T, :T] = values.numpy()
        return full

    middle_values = padded(middle)  # -inf stays -inf: drawn grey, written "-inf"
    inside = np.zeros((T_max, T_max), dtype=bool)
    inside[:T, :T] = True
    allowed = np.zeros((T_max, T_max), dtype=bool)
    allowed[:T, :T] = mask.numpy()
    middle_text = weight_texts(middle_values, allowed)
    if strategy == "neg_inf":  # scores, written as in the scores' panel
        middle_text = without_leading_zero(middle_text)
    middle_text[inside & ~allowed] = blocked_text

    weight_sums = np.zeros(T_max)
    weight_sums[:T] = weights.sum(dim=-1).numpy()
    zeroed_sums = np.zeros(T_max)
    if strategy == "renormalise":
        zeroed_sums[:T] = middle.sum(dim=-1).numpy()
    in_sequence = np.arange(T_max) < T
    weight_sum_texts = tuple(f"{total:.2f}" if shown else ""
                             for total, shown in zip(weight_sums, in_sequence, strict=True))
    zeroed_sum_texts = tuple(f"{total:.2f}" if shown and strategy == "renormalise" else ""
                             for total, shown in zip(zeroed_sums, in_sequence, strict=True))

    row = weights[query, : query + 1]
    terms = " + ".join(f"{w:.2f}" for w in row.tolist())
    n_future = T - 1 - query
    if strategy == "renormalise":
        kept = float(middle[query].sum())
        keys = f"all {T} keys" if T > 1 else "the only key"
        how = f"softmax over {keys} leaves {kept:.2f} on the allowed ones; divided by {kept:.2f}"
    else:
        later = (f"exp(-inf) = 0 for the {n_future} later key{'s' if n_future != 1 else ''}"
                 if n_future else "no later key to block")
        how = f"{later}; one softmax over the {query + 1} allowed key{'s' if query else ''}"
    caption = (f"query '{TOKENS[query]}' (row {query}): {how}:\n{terms} = "
               f"{float(row.sum()):.2f}")
    return CausalMaskingView(
        strategy=strategy, T=T, query=query, inside=inside, allowed=allowed,
        scores=padded(first), score_text=without_leading_zero(weight_texts(padded(first), inside)),
        score_range=score_range, middle=middle_values,
        middle_text=middle_text, middle_title=middle_title,
        middle_range=(0.0, 1.0) if strategy == "renormalise" else score_range,
        middle_cmap=CMAP if strategy == "renormalise" else SCORES_CMAP,
        weights=padded(weights),
        weight_sums=weight_sums, zeroed_sums=zeroed_sums, weight_sum_texts=weight_sum_texts,
        zeroed_sum_texts=zeroed_sum_texts, caption=caption)


def without_leading_zero(texts) -> np.ndarray:
    """"0.12" -> ".12", "-0.04" -> "-.04", other strings as they are: a signed score then
    fits its cell with room on both sides."""
    return np.array([[text.replace("0.", ".", 1) if text.lstrip("-").startswith("0.") else text
                      for text in row] for row in texts], dtype=object)


class CausalMaskingDrawing:
    """Above, left to right: the scores, the step in between, the weights (each (6, 6),
    cells of tokens beyond T faded out, the query's row outlined; the rows, the same
    tokens in all three, named once). Below, every row's sum as bars (blue: the weights;
    orange, strategy 1 only: after zeroing the future, before dividing), beside the
    legend. FIGURE_WIDTH wide (helpers.plotting says why)."""

    def __init__(self):
        T_max = len(TOKENS)
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 5.9), layout="constrained")
        rows = self.figure.add_gridspec(2, 1, height_ratios=[2.1, 1])
        top = rows[0].subgridspec(1, 3, wspace=0.02)
        bottom = rows[1].subgridspec(1, 2, width_ratios=[1.25, 1])
        axes = [self.figure.add_subplot(top[0, i]) for i in range(3)]
        score_ax, middle_ax, weight_ax = axes
        self.sum_ax = self.figure.add_subplot(bottom[0, 0])
        legend_ax = self.figure.add_subplot(bottom[0, 1])
        legend_ax.set_axis_off()  # a place for the legend, beside the bars
        zeros = np.zeros((T_max, T_max))
        self.score_map, self.middle_map, self.weight_map = (
            Heatmap(ax, zeros, row_labels=TOKENS if ax is score_ax else [""] * T_max,
                    col_labels=TOKENS)
            for ax in axes)
        for ax in axes[1:]:
            ax.set_ylabel("")
        for ax in axes[::2]:
            ax.set_xlabel("")  # "key (attended to)": said once, under the middle panel
        score_ax.set_title("scores  q·k / √d_k\n(red > 0 > blue)")
        self.score_map.image.set_cmap(SCORES_CMAP)  # not weights: a colour map of their own
        weight_ax.set_title("attention weights")
        # White, nearly opaque cells over those of tokens beyond T (under the cell texts).
        self.faders = [cell_layer(ax, np.zeros((T_max, T_max, 4))) for ax in axes]
        self.outlines = [ax.add_patch(Rectangle((-0.5, -0.5), T_max, 1, fill=False,
                                                edgecolor="red", linewidth=2.5))
                         for ax in axes]

        # Each query row's sums as upright bars, its two sums written up along them.
        columns = np.arange(T_max)
        self.zeroed_bars = self.sum_ax.bar(columns - 0.2, np.zeros(T_max), width=0.4,
                                           color="tab:orange")
        self.weight_bars = self.sum_ax.bar(columns + 0.2, np.zeros(T_max), width=0.4,
                                           color="tab:blue")
        label = {"rotation": 90, "ha": "center", "va": "bottom", "fontsize": TEXT_SIZE}
        self.weight_sum_labels = [self.sum_ax.text(column + 0.2, 0.03, "", color="white",
                                                   **label) for column in columns]
        self.zeroed_sum_labels = [self.sum_ax.text(column - 0.2, 0.03, "", color="black",
                                                   **label) for column in columns]
        one_line = self.sum_ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
        self.sum_ax.set_ylim(0, 1.05)
        self.sum_ax.set_xlim(-0.5, T_max - 0.5)
        self.sum_ax.set_xticks(columns, labels=TOKENS)
        self.sum_ax.set_ylabel("row sum", fontsize=TEXT_SIZE)
        self.sum_ax.tick_params(labelsize=TEXT_SIZE)
        # One legend for every panel: it never changes, so it stays in the background
        # instead of being redrawn with a panel on every change.
        self.legend = legend_ax.legend(handles=[
            Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked: a key after\n"
                  "the query"),
            Patch(facecolor="white", edgecolor="grey", label="not in the sequence (beyond T)"),
            Patch(facecolor="none", edgecolor="red", linewidth=2, label="the chosen query row"),
            Patch(facecolor="tab:blue", label="row sum of the weights"),
            Patch(facecolor="tab:orange", label="row sum after zeroing the\nfuture (strategy 1)"),
        ], loc="center", fontsize=TEXT_SIZE, frameon=False)
        self.caption = self.figure.suptitle(" \n ", fontsize=TITLE_SIZE)
        # What draw changes, and what is drawn over it: the dashed line over the bars,
        # each panel's frame over its cells and bars. The other titles never change.
        heatmaps = (self.score_map, self.middle_map, self.weight_map)
        self.animated = [
            *(artist for heatmap in heatmaps for artist in heatmap.artists()),
            *self.faders, *self.outlines, middle_ax.title, *self.zeroed_bars,
            *self.weight_bars, *self.weight_sum_labels, *self.zeroed_sum_labels, one_line,
            *(spine for ax in [*axes, self.sum_ax] for spine in ax.spines.values()),
            self.caption]

    def draw(self, view: CausalMaskingView):
        self.score_map.image.set_clim(*view.score_range)
        self.score_map.update(view.scores, mask=view.inside, cell_text=view.score_text)
        # The colour scale first: the cell texts' colours are chosen from the cell colours.
        self.middle_map.image.set_cmap(view.middle_cmap)
        self.middle_map.image.set_clim(*view.middle_range)
        self.middle_map.update(view.middle, mask=view.allowed, cell_text=view.middle_text)
        self.middle_map.ax.set_title(view.middle_title)
        self.weight_map.update(view.weights, mask=view.allowed)
        outside = np.zeros(view.inside.shape + (4,))
        outside[~view.inside] = OUTSIDE_COLOUR
        for fader, outline in zip(self.faders, self.outlines, strict=True):
            fader.set_array(outside)
            outline.set_y(view.query - 0.5)
            outline.set_width(view.T)

        strategy_1 = view.strategy == "renormalise"
        for row, (weight_bar, zeroed_bar) in enumerate(
                zip(self.weight_bars, self.zeroed_bars, strict=True)):
            weight_bar.set_height(view.weight_sums[row])
            weight_bar.set_edgecolor("red" if row == view.query else "none")
            weight_bar.set_linewidth(2 if row == view.query else 0)
            zeroed_bar.set_height(view.zeroed_sums[row])
            zeroed_bar.set_visible(strategy_1)  # strategy 2 never falls short of 1
            for label, text, height, inside_colour in [
                    (self.weight_sum_labels[row], view.weight_sum_texts[row],
                     view.weight_sums[row], "white"),
                    (self.zeroed_sum_labels[row], view.zeroed_sum_texts[row],
                     view.zeroed_sums[row], "black")]:
                label.set_text(text)
                # Up along the bar from its foot where the bar is long enough, else just
                # above its top: never half in, half out.
                fits = height >= LABEL_FITS_IN_BAR
                label.set_y(0.03 if fits else height + 0.03)
                label.set_color(inside_colour if fits else "black")
        self.caption.set_text(view.caption)
        # The legend's "beyond T" entry only while some token is beyond T. The legend is
        # not animated: whether the entry shows is the layout.
        beyond = view.T < len(view.inside)
        self.legend.legend_handles[1].set_visible(beyond)
        self.legend.get_texts()[1].set_visible(beyond)
        return beyond


@closes_the_one_before
def causal_masking_explorer(seed: int = REFERENCE_SEED) -> FigureExplorer:
    """Notebook 02: the two masking strategies, step by step, on the running example.

    Controls: the strategy, the sequence length T (the first T tokens of the running
    example) and a query row. Above, left to right: the scores, the step in between
    (strategy 1: the softmax over every key with the future set to 0; strategy 2: the
    scores with the future set to -inf) and the weights; below, every row's sum: both
    strategies reach the same weights, rows summing to 1. The caption works through the
    chosen row. The heatmaps keep their full (6, 6) size: the cells of tokens beyond T are
    faded out and left empty.
    The scores come from a SelfAttention(3, 2) built at ``seed``.
    """
    T_max = len(TOKENS)
    controls = {
        "strategy": widgets.Dropdown(
            options=[(label, key) for key, label in MASKING_STRATEGIES.items()],
            value="renormalise", description="strategy", style=CONTROL_STYLE,
            layout=widgets.Layout(width="auto", min_width="340px")),
        "T": widgets.IntSlider(
            value=T_max, min=1, max=T_max, description="sequence length T",
            continuous_update=True, style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
        "query": widgets.IntSlider(
            value=2, min=0, max=T_max - 1, description="query row", continuous_update=True,
            style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
    }

    # A shorter sequence has fewer query rows: keep the query slider inside it. Registered
    # before the explorer's own observers, so the explorer redraws with the clamped value.
    def limit_query(change):
        controls["query"].max = change["new"] - 1

    controls["T"].observe(limit_query, names="value")
    return FigureExplorer(controls,
                          partial(causal_masking_view, scores=running_example_scores(seed)),
                          CausalMaskingDrawing())
