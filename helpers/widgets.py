"""Interactive explorers built on ipywidgets.

Each explorer is a ``FigureExplorer``: a row of controls above one matplotlib figure.
The figure is drawn once; a control change calls the explorer's ``redraw`` function,
which changes the existing artists in place, and the figure is re-rendered into an
``ipywidgets.Image``. The maths behind each explorer lives in pure functions in
``helpers.attention``, tested without widgets.

Factories return the widget; they never call ``display``. In a notebook, leave the widget
as the last expression of a cell.
"""

import html

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Rectangle

from helpers.attention import projected_attention_weights
from helpers.data import TOKENS, example_inputs
from helpers.plotting import Heatmap, figure_to_png

CONTROL_STYLE = {"description_width": "initial"}
CONTROL_LAYOUT = widgets.Layout(width="auto", min_width="260px")


class FigureExplorer(widgets.VBox):
    """Controls above a figure that ``redraw(**values)`` updates in place.

    ``controls`` maps a name to a value widget (slider, dropdown, checkbox, ...) or to a
    ``Button``; ``redraw`` receives every control's value by name, and for a button the
    number of times it was clicked (a "resample" button, say). An error raised while
    redrawing is shown as a message in the widget (and kept in ``last_error``) instead of
    a traceback lost in the log.
    """

    def __init__(self, controls: dict, figure, redraw, *, dpi: int = 100):
        self.controls = controls
        self.figure = figure
        self._redraw = redraw
        self._dpi = dpi
        self.image = widgets.Image(format="png")
        self.message = widgets.HTML()
        self.last_error = None
        self.clicks = {name: 0 for name, control in controls.items()
                       if isinstance(control, widgets.Button)}
        super().__init__([widgets.HBox(list(controls.values())), self.message, self.image])
        for name, control in controls.items():
            if name in self.clicks:
                control.on_click(lambda _button, name=name: self._on_click(name))
            else:
                control.observe(self._on_change, names="value")
        self.refresh()
        # Lay the figure out once; later redraws keep it and render faster.
        figure.set_layout_engine("none")

    def values(self) -> dict:
        return {name: self.clicks[name] if name in self.clicks else control.value
                for name, control in self.controls.items()}

    def _on_change(self, _change):
        self.refresh()

    def _on_click(self, name):
        self.clicks[name] += 1
        self.refresh()

    def refresh(self):
        """Redraw from the controls' current values and show the new image."""
        try:
            self._redraw(**self.values())
        except Exception as error:  # shown to the learner, not swallowed
            self.last_error = error
            self.message.value = (
                f"<span style='color:#b00020'>{html.escape(type(error).__name__)}: "
                f"{html.escape(str(error))}</span>"
            )
            return
        self.last_error = None
        self.message.value = ""
        self.image.value = figure_to_png(self.figure, dpi=self._dpi)


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
            options=[2 ** n for n in range(1, 11)], value=2, description="d_k",
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
    bar_ax.set_xlabel("key")
    uniform = bar_ax.axhline(1 / T, color="grey", linestyle="--", label=f"uniform, 1/{T}")
    bar_ax.legend(handles=[uniform], loc="upper right")

    def redraw(query, d_k, scaled):
        weights = projected_attention_weights(x, d_k, scaled=scaled, seed=seed).numpy()
        heatmap.update(weights)
        heat_ax.set_title(f"weights, d_k = {d_k}, {'scaled' if scaled else 'not scaled'}")
        outline.set_y(query - 0.5)
        for bar, height in zip(bars, weights[query], strict=True):
            bar.set_height(height)
        bar_ax.set_title(f"query '{TOKENS[query]}': largest weight {weights[query].max():.2f}")

    return FigureExplorer(controls, figure, redraw)


def causal_attention_explorer(seed: int = 123) -> FigureExplorer:
    """Notebook 04: how one token's context vector is built from the value vectors.

    A ``CausalAttention(d_in=3, d_out=2)`` built with ``seed`` runs on a batch of two
    sequences: the running example and the same tokens in reverse order. Controls: the
    sequence, the query token and train/eval mode (dropout 0.5 in training). Left, the
    weights with the query's row outlined; right, in the 2-d value space, each visible
    token's value vector (dots), the weighted values w_j * v_j laid tip to tail (arrows),
    and their sum, the context vector (red).
    """
    from helpers.attention import CausalAttention  # local: keeps import order simple

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
    label_offset = margin * 0.3
    value_ax.axhline(0, color="lightgrey", zorder=0)
    value_ax.axvline(0, color="lightgrey", zorder=0)
    value_ax.set_xlabel("value dimension 0")
    value_ax.set_ylabel("value dimension 1")
    dots = value_ax.scatter(np.zeros(T), np.zeros(T), color="tab:blue", zorder=3)
    dot_labels = [value_ax.text(0, 0, "", fontsize=9, color="tab:blue") for _ in range(T)]
    steps = value_ax.quiver(np.zeros(T), np.zeros(T), np.zeros(T), np.zeros(T),
                            angles="xy", scale_units="xy", scale=1, color="tab:orange",
                            width=0.008, label="weight × value, tip to tail")
    total = value_ax.quiver([0], [0], [0], [0], angles="xy", scale_units="xy", scale=1,
                            color="red", width=0.012, label="context vector")
    value_ax.legend(loc="lower left", fontsize=9)

    def redraw(sequence, query, mode):
        module.train(mode != "eval")
        torch.manual_seed(seed)  # the same dropout pattern for the same choice
        with torch.no_grad():
            context, weights = module(batch, return_weights=True)
        weights = weights[sequence].numpy()
        values = all_values[sequence]
        order = list(sequences.values())[sequence]
        labels = [TOKENS[i] for i in order]
        heat_ax.set_yticks(range(T), labels=labels)
        heat_ax.set_xticks(range(T), labels=labels, rotation=45, ha="right")
        heatmap.update(weights, mask=np.tril(np.ones((T, T), dtype=bool)))
        outline.set_y(query - 0.5)
        heat_ax.set_title(f"weights ({mode.split()[0]} mode)")
        visible = np.arange(T) <= query
        dots.set_offsets(np.where(visible[:, None], values, np.nan))
        for j, label in enumerate(dot_labels):
            label.set_position(values[j] + label_offset)
            label.set_text(labels[j] if visible[j] else "")
        contributions = weights[query][:, None] * values  # (T, 2): w_j * v_j
        tails = np.cumsum(contributions, axis=0) - contributions
        steps.set_offsets(tails)
        steps.set_UVC(contributions[:, 0], contributions[:, 1])
        total.set_UVC(context[sequence, query, 0].item(), context[sequence, query, 1].item())
        value_ax.set_title(f"context vector of '{labels[query]}' = Σ weight × value")

    return FigureExplorer(controls, figure, redraw)
