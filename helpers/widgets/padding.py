"""Notebook 6: padding side, lengths, and rows with no key."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Patch, Rectangle

from helpers.attention import (
    CausalAttention,
    attention_scores,
    causal_mask,
    padded_causal_weights,
    padding_mask,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import CMAP, MASKED_COLOUR, NAN_COLOUR, Heatmap
from helpers.widgets.explorer import (
    CONTROL_STYLE,
    FigureExplorer,
)

PAD_ID = 0
PADDING_SEQUENCE_STARTS = (0, 4, 2)  # sequence b reads the running example from this token on
FULLY_MASKED_CHOICES = {
    "nan": "NaN (plain softmax of -inf)",
    "zeros": "zeros (PyTorch, helpers)",
    "uniform": "uniform (finite fill finfo.min)",
}


def padded_example_ids(lengths, T: int, *, side: str = "right") -> torch.Tensor:
    """Token ids (B, T) of a padded batch of the running example's tokens, pad id 0.

    Token ids 1..6 are the running example's tokens (id = index in TOKENS + 1). Sequence b
    holds ``lengths[b]`` tokens read cyclically from token ``PADDING_SEQUENCE_STARTS[b]``:
    "Your journey ...", "one step Your ...", "starts with one ...".
    """

    is_token = padding_mask(list(lengths), T, side=side)  # (B, T), checks lengths and side
    if len(lengths) > len(PADDING_SEQUENCE_STARTS):
        raise ValueError(f"at most {len(PADDING_SEQUENCE_STARTS)} sequences, got {len(lengths)}")
    ids = torch.full(is_token.shape, PAD_ID)
    for b, length in enumerate(lengths):
        start = PADDING_SEQUENCE_STARTS[b]
        tokens = [(start + k) % len(TOKENS) + 1 for k in range(length)]
        ids[b, is_token[b]] = torch.tensor(tokens, dtype=ids.dtype)
    return ids


def padded_example_embeddings(ids: torch.Tensor) -> torch.Tensor:
    """(B, T) token ids -> (B, T, 3) embeddings: the running example's, zeros for padding."""
    table = torch.cat([torch.zeros(1, 3), example_inputs()])  # row 0 is the padding token
    return table[ids]


def padding_explorer(seed: int = 123) -> FigureExplorer:
    """Notebook 06: causal mask, padding mask, their combination and the weights.

    Three sequences of the running example's tokens, padded to T = 6 on the chosen side
    (pad id 0, embedded as zeros), go through the query and key projections of a
    ``CausalAttention(3, 2)`` built after ``torch.manual_seed(seed)``. Controls: each
    sequence's length, the padding side, whether the padding mask hides padded keys
    (columns) or padded queries (rows), what a row with no allowed key becomes, and which
    sequence the two right-hand panels show. Panels: the causal mask; the batch, padding
    greyed; the combined mask of the shown sequence; its weights, NaN cells in orange.
    """

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = CausalAttention(d_in=3, d_out=2, context_length=len(TOKENS))
    T = len(TOKENS)
    B = len(PADDING_SEQUENCE_STARTS)
    # A change redraws in about 20 ms (no control relabels an axis): follow the slider.
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
    # A fixed layout with room for the longest token labels: the labels change with the
    # controls, and a layout engine would move the panels about between redraws.
    figure, axes = plt.subplots(1, 4, figsize=(15.5, 4.7))
    figure.subplots_adjust(left=0.04, right=0.935, bottom=0.27, top=0.84, wspace=0.5)
    plt.close(figure)
    causal_ax, batch_ax, combined_ax, weight_ax = axes
    positions = list(range(T))
    causal = causal_mask(T)
    # Masks are drawn in one mid colour of the scale (value 1 on a 0..2 scale), so that an
    # allowed cell does not look like a weight of 1.
    mask_range = (0.0, 2.0)
    causal_map = Heatmap(causal_ax, causal.double(), mask=causal, value_range=mask_range,
                         title="causal mask (T, T)")
    causal_map.update(causal.double(), mask=causal, cell_text=np.where(causal, "✓", ""))
    batch_map = Heatmap(batch_ax, np.ones((B, T)), annotate=True, value_range=mask_range,
                        row_labels=[f"seq {b}" for b in range(B)], col_labels=positions,
                        title="padding mask (B, T): the batch")
    batch_ax.set_xlabel("position")
    batch_ax.set_ylabel("sequence")
    batch_map.cell_labels.fontsize = 7.5
    shown_outline = batch_ax.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False,
                                                 edgecolor="red", linewidth=2.5))
    combined_map = Heatmap(combined_ax, np.ones((T, T)), value_range=mask_range)
    weight_map = Heatmap(weight_ax, np.zeros((T, T)))
    colour_ax = figure.add_axes((0.955, 0.3, 0.01, 0.5))  # beside, not taken from, the weights
    figure.colorbar(weight_map.image, cax=colour_ax, label="attention weight")
    figure.legend(handles=[
        Patch(facecolor=plt.get_cmap(CMAP)(0.5), edgecolor="grey",
              label="✓ may attend / real token"),
        Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked / padding"),
        Patch(facecolor=NAN_COLOUR, edgecolor="grey", label="NaN"),
        Patch(facecolor="none", edgecolor="red", linewidth=2, label="the sequence shown"),
    ], loc="lower center", ncols=4, fontsize=9)
    caption = figure.suptitle("", fontsize=11)

    def redraw(length_0, length_1, length_2, side, masked, fully_masked, shown):
        lengths = [length_0, length_1, length_2]
        ids = padded_example_ids(lengths, T, side=side)  # (B, T)
        is_token = ids != PAD_ID  # (B, T)
        x = padded_example_embeddings(ids)  # (B, T, d_in)
        with torch.no_grad():
            scores = attention_scores(module.W_query(x), module.W_key(x))  # (B, T, T)
        allowed, weights = padded_causal_weights(scores, is_token, masked=masked,
                                                 fully_masked=fully_masked)
        words = [[TOKENS[i - 1] if i != PAD_ID else "pad" for i in row] for row in ids.tolist()]

        batch_map.update(np.ones((B, T)), mask=is_token, cell_text=words)
        shown_outline.set_y(shown - 0.5)

        labels = [f"{j}:{w}" for j, w in enumerate(words[shown])]
        for heatmap in (combined_map, weight_map):
            heatmap.set_token_labels(labels, labels)
        seq_allowed = allowed[shown]  # (T, T)
        combined_map.update(seq_allowed.double(), mask=seq_allowed,
                            cell_text=np.where(seq_allowed, "✓", ""))
        where = "keys (columns)" if masked == "keys" else "queries (rows)"
        combined_ax.set_title(f"combined: causal & padded {masked}")

        seq_weights = weights[shown]  # (T, T)
        no_key = ~seq_allowed.any(dim=-1)  # (T,)
        drawn_mask = seq_allowed | no_key[:, None] if fully_masked == "uniform" else seq_allowed
        weight_map.update(seq_weights, mask=drawn_mask)
        if fully_masked == "zeros":  # rows without a key are zeros: say so in every cell
            cell_text = weight_map.cell_text.copy()
            cell_text[no_key.numpy()] = "0"
            weight_map.update(seq_weights, mask=drawn_mask, cell_text=cell_text)
        n_empty = int(no_key.sum())
        outcome = {"nan": "NaN", "zeros": "0", "uniform": f"1/{T} each"}[fully_masked]
        weight_ax.set_title(f"weights: {n_empty} row{'s' if n_empty != 1 else ''} without a key "
                            f"→ {outcome}" if n_empty else "weights: every row has a key")

        on_padding = torch.nan_to_num(weights) * ~is_token[:, None, :]  # (B, T, T)
        real_reads_pad = bool(on_padding[is_token].sum() > 0)  # rows of real queries
        n_nan = int(torch.isnan(weights).any(dim=-1).sum())
        parts = [f"{side} padding, mask on {where}:"]
        parts.append("real tokens give weight to padding" if real_reads_pad
                     else "no real token gives weight to padding")
        parts.append(f"{n_nan} NaN row{'s' if n_nan != 1 else ''} in the batch" if n_nan
                     else "no NaN in the batch")
        caption.set_text(" · ".join([parts[0] + " " + parts[1], parts[2]]))

    return FigureExplorer(controls, figure, redraw)
