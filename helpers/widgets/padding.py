"""Notebook 6: padding side, lengths, and rows with no key."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.patches import Patch, Rectangle

from helpers.attention import (
    attention_scores,
)
from helpers.attention.demos import padded_causal_weights
from helpers.data import (
    PAD_ID,
    PADDING_SEQUENCE_STARTS,
    TOKENS,
    example_causal_attention,
    padded_example_embeddings,
    padded_example_ids,
)
from helpers.plotting import (
    FIGURE_WIDTH,
    MASKED_COLOUR,
    NAN_COLOUR,
    TEXT_SIZE,
    TITLE_SIZE,
    Heatmap,
    new_figure,
    weight_texts,
)
from helpers.widgets.explorer import (
    CONTROL_STYLE,
    FigureExplorer,
    closes_the_one_before,
)

FULLY_MASKED_CHOICES = {
    "nan": "NaN (plain softmax of -inf)",
    "zeros": "zeros (never form the NaN)",
    "uniform": "uniform (finite fill finfo.min)",
}


@dataclass(frozen=True)
class PaddingView:
    """What the padding explorer shows: the padded batch, and for the sequence shown its
    combined mask and its weights."""

    words: np.ndarray  # (B, T) each position's token, "pad" for padding
    is_token: np.ndarray  # (B, T) bool: True at real tokens (the padding mask)
    shown: int  # the sequence of the two lower panels, outlined in the batch
    token_labels: tuple  # (T,) "position:token" of the sequence shown
    allowed: np.ndarray  # (T, T) bool: its combined mask, True where a query may attend
    weights: np.ndarray  # (T, T) its weights, NaN in rows with no key in "nan" mode
    weight_mask: np.ndarray  # (T, T) bool: the cells drawn as weights (others greyed)
    weight_text: np.ndarray  # (T, T) what each weight cell says: "0.25", "NaN", "0" or ""
    combined_title: str
    weights_title: str
    caption: str  # what the whole batch does, and its NaN rows


def padding_view(length_0: int, length_1: int, length_2: int, side: str, masked: str,
                 fully_masked: str, shown: int, *, seed: int = 123) -> PaddingView:
    """What ``padding_explorer`` shows for one choice of its controls: the three sequences
    padded to T = 6 on ``side`` (``padded_example_ids``), their scores through the module
    built with ``seed``, and the weights with padding hidden on the ``masked`` side and
    rows with no key made ``fully_masked`` (``helpers.attention.padded_causal_weights``)."""
    T = len(TOKENS)
    module = example_causal_attention(seed)  # its query and key projections
    ids = padded_example_ids([length_0, length_1, length_2], T, side=side)  # (B, T)
    is_token = ids != PAD_ID  # (B, T)
    x = padded_example_embeddings(ids)  # (B, T, d_in)
    with torch.no_grad():
        scores = attention_scores(module.W_query(x), module.W_key(x))  # (B, T, T)
    allowed, weights = padded_causal_weights(scores, is_token, masked=masked,
                                             fully_masked=fully_masked)
    words = np.array([[TOKENS[i - 1] if i != PAD_ID else "pad" for i in row]
                      for row in ids.tolist()], dtype=object)

    seq_allowed = allowed[shown].numpy()  # (T, T)
    seq_weights = weights[shown].numpy()  # (T, T)
    no_key = ~seq_allowed.any(axis=-1)  # (T,)
    # A uniform row is drawn as weights; a NaN or zero row as masked cells, saying so.
    weight_mask = seq_allowed | no_key[:, None] if fully_masked == "uniform" else seq_allowed
    weight_text = weight_texts(seq_weights, weight_mask)
    if fully_masked == "zeros":  # rows without a key are zeros: say so in every cell
        weight_text[no_key] = "0"
    n_empty = int(no_key.sum())
    outcome = {"nan": "NaN", "zeros": "0", "uniform": f"1/{T} each"}[fully_masked]

    on_padding = torch.nan_to_num(weights) * ~is_token[:, None, :]  # (B, T, T)
    real_reads_pad = bool(on_padding[is_token].sum() > 0)  # rows of real queries
    n_nan = int(torch.isnan(weights).any(dim=-1).sum())
    reads = ("real tokens attend to padding" if real_reads_pad
             else "no real token attends to padding")
    nans = (f"{n_nan} NaN row{'s' if n_nan != 1 else ''} in the batch" if n_nan
            else "no NaN in the batch")
    return PaddingView(
        words=words, is_token=is_token.numpy(), shown=shown,
        token_labels=tuple(f"{j}:{word}" for j, word in enumerate(words[shown])),
        allowed=seq_allowed, weights=seq_weights, weight_mask=weight_mask,
        weight_text=weight_text, combined_title=f"combined: causal & padded {masked}",
        weights_title=(f"attention weights: {n_empty} row{'s' if n_empty != 1 else ''} "
                       f"without a key → {outcome}" if n_empty
                       else "attention weights: every row has a key"),
        caption=f"{side} padding, {masked} masked: {reads}; {nans}")


class PaddingDrawing:
    """Above: the batch with its padding mask (padding greyed, the sequence shown
    outlined), beside the legend. Below: that sequence's combined mask (causal and
    padding); its weights, NaN cells in orange. The caption above reports the whole
    batch."""

    def __init__(self):
        T = len(TOKENS)
        B = len(PADDING_SEQUENCE_STARTS)
        # Two rows, FIGURE_WIDTH wide: above, the batch, whose cells are wide enough for its
        # token words, beside the legend; below, the shown sequence's combined mask and its
        # weights, whose cells hold their values. (The causal mask, drawn in the notebook
        # before, is not drawn again: the combined mask holds it.)
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 6.1), layout="constrained")
        rows = self.figure.add_gridspec(2, 1, height_ratios=[1, 2.6])
        top = rows[0].subgridspec(1, 2, width_ratios=[2.2, 1])
        bottom = rows[1].subgridspec(1, 2, width_ratios=[1, 1.4])
        batch_ax, legend_place = (self.figure.add_subplot(top[0, i]) for i in range(2))
        combined_ax, weight_ax = (self.figure.add_subplot(bottom[0, i]) for i in range(2))
        # Masks are drawn in one mid colour of the scale (value 1 on a 0..2 scale), so that
        # an allowed cell does not look like a weight of 1.
        mask_range = (0.0, 2.0)
        self.batch_map = Heatmap(batch_ax, np.ones((B, T)), annotate=True,
                                 value_range=mask_range,
                                 row_labels=[f"seq {b}" for b in range(B)],
                                 col_labels=range(T),
                                 title="padding mask (B, T)")
        batch_ax.set_aspect("auto")
        batch_ax.set_xlabel("position")
        batch_ax.set_ylabel("sequence")
        for label in batch_ax.get_xticklabels():
            label.set(rotation=0, horizontalalignment="center")
        self.shown_outline = batch_ax.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False,
                                                          edgecolor="red", linewidth=2.5))
        self.combined_map = Heatmap(combined_ax, np.ones((T, T)), value_range=mask_range)
        self.weight_map = Heatmap(weight_ax, np.zeros((T, T)))
        colorbar = self.figure.colorbar(self.weight_map.image, ax=weight_ax, shrink=0.8)
        colorbar.set_label("attention weight", fontsize=TEXT_SIZE)
        colorbar.ax.tick_params(labelsize=TEXT_SIZE)
        legend = self.figure.legend(handles=[
            Patch(facecolor=self.batch_map.image.to_rgba(1.0), edgecolor="grey",
                  label="✓ may attend / real token"),
            Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked / padding"),
            Patch(facecolor=NAN_COLOUR, edgecolor="grey", label="NaN"),
            Patch(facecolor="none", edgecolor="red", linewidth=2, label="the sequence shown"),
        ], loc="center", fontsize=TEXT_SIZE, frameon=False)
        self.caption = self.figure.suptitle(" ", fontsize=TITLE_SIZE)
        # Laid out once, with the widest token labels and titles the controls can bring:
        # every later one fits, and the panels never move (the explorer keeps this layout).
        widest = [f"{j}:{max(TOKENS, key=len)}" for j in range(T)]
        for heatmap in (self.combined_map, self.weight_map):
            heatmap.set_token_labels(widest, widest)
        combined_ax.set_title("combined: causal & padded queries")
        weight_ax.set_title(f"attention weights: {T} rows without a key → 1/{T} each")
        layout = self.figure.get_layout_engine()
        layout.set(w_pad=8 / 72, h_pad=6 / 72)  # air between a panel and the next one's labels
        layout.execute(self.figure)
        self.figure.set_layout_engine("none")
        # The legend in the place kept for it beside the batch (a figure legend: it never
        # changes, so it stays in the background).
        place = legend_place.get_position()
        legend.set_bbox_to_anchor((place.x0 + place.width / 2, place.y0 + place.height / 2),
                                  transform=self.figure.transFigure)
        legend_place.remove()
        # What draw changes (every panel's cells, the lower panels' titles), and the shown
        # sequence's outline and each panel's frame, drawn over its cells.
        heatmaps = (self.batch_map, self.combined_map, self.weight_map)
        self.animated = [*(artist for heatmap in heatmaps
                           for artist in (*heatmap.artists(), *heatmap.ax.spines.values())),
                         self.combined_map.ax.title, self.weight_map.ax.title,
                         self.shown_outline, self.caption]

    def draw(self, view: PaddingView):
        self.batch_map.update(np.ones(view.words.shape), mask=view.is_token,
                              cell_text=view.words)
        self.shown_outline.set_y(view.shown - 0.5)
        for heatmap in (self.combined_map, self.weight_map):
            heatmap.set_token_labels(view.token_labels, view.token_labels)
        self.combined_map.update(view.allowed.astype(float), mask=view.allowed,
                                 cell_text=np.where(view.allowed, "✓", ""))
        self.combined_map.ax.set_title(view.combined_title)
        self.weight_map.update(view.weights, mask=view.weight_mask, cell_text=view.weight_text)
        self.weight_map.ax.set_title(view.weights_title)
        self.caption.set_text(view.caption)
        return view.token_labels  # the lower panels' tick labels


@closes_the_one_before
def padding_explorer(seed: int = 123) -> FigureExplorer:
    """Notebook 06: the padding mask, its combination with the causal mask, the weights.

    Three sequences of the running example's tokens, padded to T = 6 on the chosen side
    (pad id 0, embedded as zeros), go through the query and key projections of a
    ``CausalAttention(3, 2)`` built with seed ``seed``. Controls: each sequence's length,
    the padding side, whether the padding mask hides padded keys (columns) or padded
    queries (rows), what a row with no allowed key becomes, and which sequence the two
    lower panels show. Panels: above, the batch, padding greyed; below, the combined
    (causal and padding) mask of the shown sequence and its weights, NaN cells in orange.
    """
    T = len(TOKENS)
    B = len(PADDING_SEQUENCE_STARTS)
    # The sliders follow the drag (continuous_update): a change redraws fast enough for it
    # (benchmarks/widget_latency.py measures how fast).
    slider = {"min": 0, "max": T, "continuous_update": True, "style": CONTROL_STYLE,
              "layout": widgets.Layout(width="auto", min_width="230px")}
    controls = {
        "length_0": widgets.IntSlider(value=6, description="length of sequence 0", **slider),
        "length_1": widgets.IntSlider(value=2, description="length of sequence 1", **slider),
        "length_2": widgets.IntSlider(value=3, description="length of sequence 2", **slider),
        "side": widgets.ToggleButtons(options=["right", "left"], value="left",
                                      description="padding side", style=CONTROL_STYLE),
        "masked": widgets.ToggleButtons(
            options=[("keys (columns)", "keys"), ("queries (rows)", "queries")], value="keys",
            description="padding mask hides", style=CONTROL_STYLE),
        "fully_masked": widgets.Dropdown(
            options=[(label, key) for key, label in FULLY_MASKED_CHOICES.items()],
            value="nan", description="rows with no key", style=CONTROL_STYLE,
            layout=widgets.Layout(width="auto", min_width="320px")),
        "shown": widgets.Dropdown(options=[(f"sequence {b}", b) for b in range(B)], value=1,
                                  description="show", style=CONTROL_STYLE),
    }
    return FigureExplorer(controls, partial(padding_view, seed=seed), PaddingDrawing())
