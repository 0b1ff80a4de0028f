"""Notebook 2: the two causal-masking strategies, step by step."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Patch, Rectangle

from helpers.attention import (
    SelfAttention,
    attention_scores,
    causal_mask,
    masked_weights_by_neg_inf,
    masked_weights_by_renormalising,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import MASKED_COLOUR, Heatmap, cell_layer, set_cells
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
)

MASKING_STRATEGIES = {
    "renormalise": "1: softmax, zero the future, renormalise",
    "neg_inf": "2: -inf above the diagonal, one softmax",
}
OUTSIDE_COLOUR = (1.0, 1.0, 1.0, 0.85)  # cells of tokens not in the sequence: faded out


def _running_example_scores(seed: int):
    """Scaled scores (6, 6) of the running example, from SelfAttention(3, 2) built after
    torch.manual_seed(seed); the global random state is left as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = SelfAttention(d_in=3, d_out=2)
    x = example_inputs()  # (T, d_in)
    with torch.no_grad():
        return attention_scores(module.W_query(x), module.W_key(x))  # (T, T)


def causal_masking_explorer(seed: int = 789) -> FigureExplorer:
    """Notebook 02: the two masking strategies, step by step, on the running example.

    Controls: the strategy, the sequence length T (the first T tokens of the running
    example) and a query row. Left to right: the scores, the step in between (strategy 1:
    the softmax over every key with the future set to 0; strategy 2: the scores with the
    future set to -inf), the weights, and every row's sum. The heatmaps keep their full
    (6, 6) size: the cells of tokens beyond T are faded out and left empty.
    """
    all_scores = _running_example_scores(seed)
    T_max = len(TOKENS)
    score_range = (float(all_scores.min()), float(all_scores.max()))
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

    figure, axes = plt.subplots(
        1, 4, figsize=(15.5, 4.6), layout="constrained",
        gridspec_kw={"width_ratios": [1, 1, 1, 0.75]})
    plt.close(figure)
    score_ax, middle_ax, weight_ax, sum_ax = axes
    zeros = np.zeros((T_max, T_max))
    heatmaps = [Heatmap(ax, zeros, row_labels=TOKENS, col_labels=TOKENS, value_range=value_range)
                for ax, value_range in ((score_ax, score_range), (middle_ax, (0.0, 1.0)),
                                        (weight_ax, (0.0, 1.0)))]
    score_ax.set_title("scores  q·k / √d_k")
    weight_ax.set_title("weights")
    faders = [cell_layer(ax, np.zeros((T_max, T_max, 4))) for ax in axes[:3]]
    # Above the cell values (zorder 5), so that moving it redraws no text under it.
    outlines = [ax.add_patch(Rectangle((-0.5, -0.5), T_max, 1, fill=False, edgecolor="red",
                                       linewidth=2.5, zorder=5)) for ax in axes[:3]]

    rows = np.arange(T_max)
    before_bars = sum_ax.barh(rows - 0.2, np.zeros(T_max), height=0.4, color="tab:orange",
                              label="after zeroing the future")
    final_bars = sum_ax.barh(rows + 0.2, np.zeros(T_max), height=0.4, color="tab:blue",
                             label="weights")
    sum_labels = [sum_ax.text(0.02, row + 0.2, "", va="center", fontsize=8, color="white")
                  for row in rows]
    before_labels = [sum_ax.text(0.02, row - 0.2, "", va="center", fontsize=8, color="black")
                     for row in rows]
    sum_ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    sum_ax.set_xlim(0, 1.05)
    sum_ax.set_ylim(T_max - 0.5, -0.5)
    sum_ax.set_yticks(rows, labels=TOKENS)
    sum_ax.set_xlabel("sum of the row")
    sum_ax.set_title("row sums")
    # The weights first and no frame: hiding the other entry (strategy 2) leaves no gap.
    sums_legend = sum_ax.legend(handles=[final_bars, before_bars], loc="upper center",
                                bbox_to_anchor=(0.5, -0.16), fontsize=8, frameon=False)
    figure.legend(handles=[
        Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked: a key after the query"),
        Patch(facecolor="white", edgecolor="grey", label="not in the sequence (beyond T)"),
        Patch(facecolor="none", edgecolor="red", linewidth=2, label="the chosen query row"),
    ], loc="outside lower center", ncols=3, fontsize=9)
    caption = figure.suptitle("", fontsize=10)

    shown = {}  # what the picture shows now

    def draw_matrices(T, scores, middle, weights, mask, middle_range, blocked_text):
        """The three heatmaps and the faded cells beyond T. The token labels stay as
        they are: relabelling an axis would redraw the whole figure on every change of T."""
        heatmaps[1].image.set_clim(*middle_range)

        inside = np.zeros((T_max, T_max), dtype=bool)
        inside[:T, :T] = True
        allowed = np.zeros((T_max, T_max), dtype=bool)
        allowed[:T, :T] = mask.numpy()
        for heatmap, values, cell_mask in ((heatmaps[0], scores, inside),
                                           (heatmaps[1], middle, allowed),
                                           (heatmaps[2], weights, allowed)):
            padded = np.zeros((T_max, T_max))
            finite = torch.where(torch.isfinite(values), values, 0.0)
            padded[:T, :T] = finite.numpy()
            cell_text = None
            if heatmap is heatmaps[1]:  # the step in between writes what blocked cells hold
                cell_text = np.where(allowed, heatmap.cell_text, "")
                cell_text[:T, :T][~mask.numpy()] = blocked_text
            heatmap.update(padded, mask=cell_mask)
            if cell_text is not None:
                heatmap.update(padded, mask=cell_mask, cell_text=cell_text)
        outside = np.zeros((T_max, T_max, 4))
        outside[~inside] = OUTSIDE_COLOUR
        for fader in faders:
            set_cells(fader, outside)

    def redraw(strategy, T, query):
        query = min(query, T - 1)
        scores = all_scores[:T, :T]  # (T, T): the first T tokens
        mask = causal_mask(T)  # (T, T), True = may attend
        if strategy == "renormalise":
            middle = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
            weights = masked_weights_by_renormalising(scores, mask)
            middle_range, blocked_text = (0.0, 1.0), "0"
            middle_ax.set_title("softmax over all keys, future × 0")
        else:
            middle = scores.masked_fill(~mask, float("-inf"))
            weights = masked_weights_by_neg_inf(scores, mask)
            middle_range, blocked_text = score_range, "-inf"
            middle_ax.set_title("masked scores, future = -inf")
        # Only the query changed: the matrices, sums and labels stay as they are drawn,
        # and the renderer redraws only the outline, the bars' edges and the caption.
        if shown.get("matrices") != (strategy, T):
            shown["matrices"] = (strategy, T)
            draw_matrices(T, scores, middle, weights, mask, middle_range, blocked_text)
        for outline in outlines:
            outline.set_y(query - 0.5)
            outline.set_width(T)

        before_sums = middle.sum(dim=-1) if strategy == "renormalise" else torch.zeros(T)
        final_sums = weights.sum(dim=-1)
        for row in rows:
            inside_row = row < T
            before_bars[row].set_width(float(before_sums[row]) if inside_row else 0.0)
            final_bars[row].set_width(float(final_sums[row]) if inside_row else 0.0)
            final_bars[row].set_edgecolor("red" if row == query else "none")
            final_bars[row].set_linewidth(2 if row == query else 0)
            sum_labels[row].set_text(f"{float(final_sums[row]):.4f}" if inside_row else "")
            before_labels[row].set_text(f"{float(before_sums[row]):.4f}"
                                        if inside_row and strategy == "renormalise" else "")
        # Strategy 2 has no step where the weights fall short of 1: hide those bars.
        for artist in [*before_bars, sums_legend.legend_handles[1], sums_legend.get_texts()[1]]:
            artist.set_visible(strategy == "renormalise")

        row = weights[query, : query + 1]
        terms = " + ".join(f"{w:.2f}" for w in row.tolist())
        n_future = T - 1 - query
        if strategy == "renormalise":
            kept = float(middle[query].sum())
            how = (f"softmax over all {T} keys leaves {kept:.2f} on the allowed ones; "
                   f"divided by {kept:.2f}")
        else:
            later = (f"exp(-inf) = 0 for the {n_future} later key{'s' if n_future != 1 else ''}"
                     if n_future else "no later key to block")
            how = f"{later}; one softmax over the {query + 1} allowed"
        caption.set_text(f"query '{TOKENS[query]}' (row {query}): {how}:  {terms} = "
                         f"{float(row.sum()):.2f}")

    return FigureExplorer(controls, figure, redraw)
