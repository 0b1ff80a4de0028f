"""Notebook 4: how a context vector is built from the value vectors."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Rectangle

from helpers.attention import (
    CausalAttention,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import Heatmap
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
)


def causal_attention_explorer(seed: int = 123) -> FigureExplorer:
    """Notebook 04: how one token's context vector is built from the value vectors.

    A ``CausalAttention(d_in=3, d_out=2)`` built with ``seed`` runs on a batch of two
    sequences: the running example and the same tokens in reverse order. Controls: the
    sequence, the query token and train/eval mode (dropout 0.5 in training). Left, the
    weights with the query's row outlined; right, in the 2-d value space, each visible
    token's value vector (dots; tokens with almost the same value share one label), the
    weighted values w_j * v_j laid tip to tail (arrows), and their sum, the context vector
    (red).
    """

    torch.manual_seed(seed)
    module = CausalAttention(d_in=3, d_out=2, context_length=len(TOKENS), dropout=0.5)
    sequences = {"Your journey starts ...": list(range(len(TOKENS))),
                 "... starts journey Your (reversed)": list(reversed(range(len(TOKENS))))}
    batch = torch.stack([example_inputs()[order] for order in sequences.values()])
    T = len(TOKENS)
    controls = {
        "sequence": widgets.Dropdown(options=[(name, b) for b, name in enumerate(sequences)],
                                     value=0, description="sequence", style=CONTROL_STYLE,
                                     layout=CONTROL_LAYOUT),
        "query": widgets.IntSlider(value=3, min=0, max=T - 1, description="query position",
                                   style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
        "mode": widgets.ToggleButtons(options=["eval", "train (dropout 0.5)"], value="eval",
                                      description="mode", style=CONTROL_STYLE),
    }
    figure, (heat_ax, value_ax) = plt.subplots(1, 2, figsize=(10, 4.4), layout="constrained")
    plt.close(figure)
    # Same colour scale as everywhere; a weight doubled by dropout shows as the top colour.
    heatmap = Heatmap(heat_ax, np.zeros((T, T)))
    outline = heat_ax.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False, edgecolor="red",
                                          linewidth=3))
    with torch.no_grad():
        all_values = module.W_value(batch).numpy()  # (B, T, 2)
    # Fixed limits that hold every value vector and the origin (dropout can double a weight,
    # so a context vector may reach twice as far as the values).
    low = np.minimum(all_values.reshape(-1, 2).min(0), 0) * 2
    high = np.maximum(all_values.reshape(-1, 2).max(0), 0) * 2
    margin = (high - low) * 0.08
    value_ax.set_xlim(low[0] - margin[0], high[0] + margin[0])
    value_ax.set_ylim(low[1] - margin[1], high[1] + margin[1])
    label_offset = margin * np.array([0.3, -0.3])  # names below right of their dot
    value_ax.axhline(0, color="lightgrey", zorder=0)
    value_ax.axvline(0, color="lightgrey", zorder=0)
    value_ax.set_xlabel("value dimension 0")
    value_ax.set_ylabel("value dimension 1")
    dots = value_ax.scatter(np.zeros(T), np.zeros(T), color="tab:blue", zorder=3)
    dot_labels = [value_ax.text(0, 0, "", fontsize=9, color="tab:blue", va="top")
                  for _ in range(T)]
    steps = value_ax.quiver(np.zeros(T), np.zeros(T), np.zeros(T), np.zeros(T),
                            angles="xy", scale_units="xy", scale=1, color="tab:orange",
                            width=0.008, label="weight × value, tip to tail")
    total = value_ax.quiver([0], [0], [0], [0], angles="xy", scale_units="xy", scale=1,
                            color="red", width=0.012, label="context vector")
    value_ax.legend(loc="upper left", fontsize=9)

    def redraw(sequence, query, mode):
        module.train(mode != "eval")
        torch.manual_seed(seed)  # the same dropout pattern for the same choice
        with torch.no_grad():
            context, weights = module(batch, return_weights=True)
        weights = weights[sequence].numpy()
        values = all_values[sequence]
        order = list(sequences.values())[sequence]
        labels = [TOKENS[i] for i in order]
        heatmap.set_token_labels(labels, labels)
        heatmap.update(weights, mask=np.tril(np.ones((T, T), dtype=bool)))
        outline.set_y(query - 0.5)
        heat_ax.set_title(f"weights ({mode.split()[0]} mode)")
        visible = np.arange(T) <= query
        dots.set_offsets(np.where(visible[:, None], values, np.nan))
        names = _names_of_nearby_points(values, labels, visible, near=margin)
        for j, label in enumerate(dot_labels):
            label.set_position(values[j] + label_offset)
            label.set_text(names[j])
        contributions = weights[query][:, None] * values  # (T, 2): w_j * v_j
        tails = np.cumsum(contributions, axis=0) - contributions
        steps.set_offsets(tails)
        steps.set_UVC(contributions[:, 0], contributions[:, 1])
        total.set_UVC(context[sequence, query, 0].item(), context[sequence, query, 1].item())
        value_ax.set_title(f"context vector of '{labels[query]}' = Σ weight × value")

    return FigureExplorer(controls, figure, redraw)


def _names_of_nearby_points(points, names, visible, *, near) -> list:
    """One label per group of visible points that lie within ``near`` of each other on both
    axes (tokens with almost the same value vector, like "journey" and "starts"): the
    group's names, one per line, on its first point; empty strings elsewhere."""
    texts = [""] * len(names)
    leaders = []  # first point of each group
    for j in np.flatnonzero(visible):
        leader = next((k for k in leaders if np.all(np.abs(points[j] - points[k]) <= near)), None)
        if leader is None:
            leaders.append(j)
            texts[j] = names[j]
        else:
            texts[leader] += "\n" + names[j]
    return texts
