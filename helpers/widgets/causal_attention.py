"""Notebook 4: how a context vector is built from the value vectors."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.patches import Rectangle

from helpers.data import TOKENS, example_causal_attention, example_inputs
from helpers.plotting import FIGURE_WIDTH, TEXT_SIZE, Heatmap, new_figure
from helpers.seeding import seeded
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
    closes_the_one_before,
)

# The two sequences of the batch: the running example, and its tokens in reverse order.
CAUSAL_SEQUENCES = {
    "Your journey starts ...": tuple(range(len(TOKENS))),
    "... starts journey Your (reversed)": tuple(reversed(range(len(TOKENS)))),
}
CAUSAL_MODES = ("eval", "train (dropout 0.5)")
STEP_SHADES = ("tab:orange", "#a84300")  # every other orange arrow in the darker shade


@dataclass(frozen=True)
class CausalAttentionView:
    """What the causal-attention explorer shows: one sequence of the batch, one query."""

    weights: np.ndarray  # (T, T) the sequence's weights (dropped and rescaled in train mode)
    query: int  # the row outlined, whose context vector is built on the right
    token_labels: tuple  # (T,) the sequence's tokens, in its order
    values: np.ndarray  # (T, 2) every token's value vector
    visible: np.ndarray  # (T,) bool: the tokens the query may see (positions <= query)
    dot_names: tuple  # (T,) each dot's name, "" where it shares a nearby dot's name
    name_positions: np.ndarray  # (T, 2) where each name is written, below right of its dot
    tails: np.ndarray  # (T, 2) where each arrow w_j * v_j starts: tip to tail from 0
    contributions: np.ndarray  # (T, 2) the arrows w_j * v_j
    context: np.ndarray  # (2,) the query's context vector, the sum of the arrows
    value_limits: tuple  # ((x0, x1), (y0, y1)) of the value plane: the same for every view
    heatmap_title: str
    value_title: str


def causal_attention_view(sequence: int, query: int, mode: str, *, seed: int = 123):
    """What ``causal_attention_explorer`` shows for one choice of its controls.

    The module built with ``seed`` runs on the batch of both sequences, in eval or train
    mode; in train mode the dropout pattern is drawn at ``seed`` (``seeded``), so
    the same choice always shows the same pattern. The global random state is left alone.
    """
    module = example_causal_attention(seed, dropout=0.5)
    orders = list(CAUSAL_SEQUENCES.values())
    batch = torch.stack([example_inputs()[list(order)] for order in orders])  # (B, T, 3)
    with torch.no_grad():
        all_values = module.W_value(batch).numpy()  # (B, T, 2)
    runs = {}  # both modes, for limits that fit either
    for each_mode in CAUSAL_MODES:
        module.train(each_mode.split()[0] == "train")
        with seeded(seed), torch.no_grad():
            runs[each_mode] = module(batch, return_weights=True)  # (B, T, 2), (B, T, T)
    context, weights = runs[mode]
    # Limits fitted to everything either mode draws, for any sequence and query: the plane
    # does not rescale as the learner moves a control (dropout's 1/(1-p) makes train mode's
    # arrows reach further; in eval mode they look shorter, as they are).
    reached = [np.zeros((1, 2)), all_values.reshape(-1, 2)]
    for _, each_weights in runs.values():
        tips = np.cumsum(each_weights.numpy()[..., None] * all_values[:, None], axis=2)
        reached.append(tips.reshape(-1, 2))  # every arrow's tip, (B * T * T, 2)
    reached = np.concatenate(reached)
    low, high = reached.min(0), reached.max(0)
    margin = (high - low) * 0.08
    weights = weights[sequence].numpy()
    values = all_values[sequence]
    labels = tuple(TOKENS[i] for i in orders[sequence])
    visible = np.arange(len(TOKENS)) <= query
    contributions = weights[query][:, None] * values  # (T, 2): w_j * v_j
    return CausalAttentionView(
        weights=weights, query=query, token_labels=labels, values=values, visible=visible,
        # Names of dots closer than about a name's size share one label.
        dot_names=tuple(names_of_nearby_points(values, labels, visible, near=2 * margin)),
        name_positions=values + margin * np.array([0.3, -0.3]),
        tails=np.cumsum(contributions, axis=0) - contributions, contributions=contributions,
        context=context[sequence, query].numpy(),
        # below, room for a name of two lines under the lowest dot
        value_limits=((float(low[0] - margin[0]), float(high[0] + margin[0])),
                      (float(low[1] - 3 * margin[1]), float(high[1] + margin[1]))),
        heatmap_title=f"sequence {sequence}{' (reversed)' if sequence else ''}: attention weights "
                      f"({mode.split()[0]} mode)",
        value_title=f"context vector of '{labels[query]}':\nΣ attention weight × value")


def names_of_nearby_points(points, names, visible, *, near) -> list:
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


class CausalAttentionDrawing:
    """Left, the causal weights with the query's row outlined; right, the 2-d value plane:
    the visible tokens' value vectors (dots, named), the weighted values laid tip to tail
    (orange arrows) and their sum, the context vector (red arrow)."""

    def __init__(self):
        T = len(TOKENS)
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 4.8), layout="constrained")
        heat_ax, self.value_ax = self.figure.subplots(1, 2)
        # Same colour scale as everywhere; a weight doubled by dropout shows as the top colour.
        self.heatmap = Heatmap(heat_ax, np.zeros((T, T)), row_labels=TOKENS, col_labels=TOKENS)
        self.outline = heat_ax.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False,
                                                   edgecolor="red", linewidth=3))
        self.causal = np.tril(np.ones((T, T), dtype=bool))
        ax = self.value_ax
        ax.axhline(0, color="lightgrey", zorder=0)
        ax.axvline(0, color="lightgrey", zorder=0)
        ax.set_xlabel("value dimension 0", fontsize=TEXT_SIZE)
        ax.set_ylabel("value dimension 1", fontsize=TEXT_SIZE)
        ax.tick_params(labelsize=TEXT_SIZE)
        self.dots = ax.scatter(np.zeros(T), np.zeros(T), color="tab:blue", zorder=3)
        self.dot_names = [ax.text(0, 0, "", fontsize=TEXT_SIZE, color="tab:blue", va="top")
                          for _ in range(T)]
        # Orange arrows over the red one, so that the last is not hidden under its head; two
        # shades, one after the other, and a white edge tell apart arrows on one line.
        self.steps = ax.quiver(np.zeros(T), np.zeros(T), np.zeros(T), np.zeros(T),
                               angles="xy", scale_units="xy", scale=1, color="tab:orange",
                               width=0.012, edgecolor="white", linewidth=0.5, zorder=2.5,
                               label="attention weight × value, tip to tail")
        self.total = ax.quiver([0], [0], [0], [0], angles="xy", scale_units="xy", scale=1,
                               color="red", alpha=0.5, width=0.02, zorder=2,
                               label="context vector")
        # Below the figure, not inside the value plane: the plane is redrawn on every
        # change, and a legend in it would be redrawn with it.
        self.figure.legend(handles=[self.steps, self.total], loc="outside lower right",
                           ncols=2, fontsize=TEXT_SIZE)
        # What draw changes, and each panel's frame, drawn over its cells and arrows.
        self.animated = [*self.heatmap.artists(), self.outline, heat_ax.title, self.dots,
                         *self.dot_names, self.steps, self.total, ax.title,
                         *heat_ax.spines.values(), *ax.spines.values()]

    def draw(self, view: CausalAttentionView):
        self.heatmap.set_token_labels(view.token_labels, view.token_labels)
        self.heatmap.update(view.weights, mask=self.causal)
        self.heatmap.ax.set_title(view.heatmap_title, fontsize=TEXT_SIZE)
        self.outline.set_y(view.query - 0.5)
        self.value_ax.set_xlim(*view.value_limits[0])
        self.value_ax.set_ylim(*view.value_limits[1])
        self.dots.set_offsets(np.where(view.visible[:, None], view.values, np.nan))
        for text, name, position in zip(self.dot_names, view.dot_names, view.name_positions,
                                        strict=True):
            text.set_text(name)
            text.set_position(position)
        self.steps.set_offsets(view.tails)
        shown = np.flatnonzero(np.abs(view.contributions).sum(axis=1) > 0)  # drawn arrows
        shades = np.full(len(view.tails), STEP_SHADES[0], dtype=object)
        shades[shown[1::2]] = STEP_SHADES[1]
        self.steps.set_facecolor(list(shades))
        self.steps.set_UVC(view.contributions[:, 0], view.contributions[:, 1])
        self.total.set_UVC(view.context[0], view.context[1])
        self.value_ax.set_title(view.value_title, fontsize=TEXT_SIZE)
        return view.token_labels, view.value_limits  # the tick labels and the axes' limits


@closes_the_one_before
def causal_attention_explorer(seed: int = 123) -> FigureExplorer:
    """Notebook 04: how one token's context vector is built from the value vectors.

    A ``CausalAttention(d_in=3, d_out=2)`` built with ``seed`` runs on a batch of two
    sequences: the running example and the same tokens in reverse order. Controls: the
    sequence, the query token and train/eval mode (dropout 0.5 in training). Left, the
    weights with the query's row outlined; right, in the 2-d value space, each visible
    token's value vector (dots; tokens with almost the same value share one label), the
    weighted values w_j * v_j laid tip to tail (arrows), and their sum, the context vector
    (red). Building or moving it leaves torch's global random state as it was.
    """
    T = len(TOKENS)
    controls = {
        "sequence": widgets.Dropdown(
            options=[(name, b) for b, name in enumerate(CAUSAL_SEQUENCES)], value=0,
            description="sequence", style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
        "query": widgets.IntSlider(value=3, min=0, max=T - 1, description="query position",
                                   style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
        "mode": widgets.ToggleButtons(options=list(CAUSAL_MODES), value="eval",
                                      description="mode", style=CONTROL_STYLE),
    }
    return FigureExplorer(controls, partial(causal_attention_view, seed=seed),
                          CausalAttentionDrawing())
