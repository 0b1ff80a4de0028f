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


# ---------------------------------------------------------------- notebook 05: multi-head explorer

# Orders of the running example's tokens offered by the multi-head explorer. Under a causal
# mask the order decides who can see whom, so each order gives other pictures.
SEQUENCE_ORDERS = {
    "running example": (0, 1, 2, 3, 4, 5),
    "reversed": (5, 4, 3, 2, 1, 0),
    "shuffled": (3, 0, 5, 1, 4, 2),
}


def multi_head_explorer(seed: int = 123, max_heads: int = 4, max_d_out: int = 12,
                        weight_std: float = 2.0) -> FigureExplorer:
    """Notebook 05: the causal weights of every head, side by side.

    Controls: the sequence (the running example in one of the orders of
    ``SEQUENCE_ORDERS``), the number of heads H, d_out, and a button that draws new
    weights. The weights come from a MultiHeadAttention built with seed ``seed`` + the
    number of clicks, its query and key weights drawn with spread ``weight_std``
    (``helpers.attention.multi_head_weights``), so a setting always gives the same picture.
    ``max_heads`` panels are drawn once; a change updates the first H and hides the
    others. A d_out that H does not divide is answered with a message in the widget.
    """
    from helpers.attention import causal_mask, head_split_problem, multi_head_weights

    inputs = example_inputs()
    T = len(TOKENS)
    mask = causal_mask(T).numpy()
    controls = {
        "sequence": widgets.Dropdown(
            options=list(SEQUENCE_ORDERS), value="running example", description="sequence",
            style=CONTROL_STYLE, layout=widgets.Layout(width="auto", min_width="240px")),
        "num_heads": widgets.IntSlider(
            value=3, min=1, max=max_heads, description="heads H", continuous_update=False,
            style=CONTROL_STYLE, layout=widgets.Layout(width="auto", min_width="220px")),
        "d_out": widgets.IntSlider(
            value=6, min=1, max=max_d_out, description="d_out", continuous_update=False,
            style=CONTROL_STYLE, layout=widgets.Layout(width="auto", min_width="220px")),
        "new_weights": widgets.Button(description="draw new weights", icon="refresh"),
    }
    figure, axes = plt.subplots(1, max_heads, figsize=(2.45 * max_heads + 1.0, 3.5),
                                layout="constrained", squeeze=False)
    plt.close(figure)
    heatmaps = [Heatmap(ax, np.zeros((T, T)), mask=mask, row_labels=TOKENS, col_labels=TOKENS,
                        title=f"head {h}") for h, ax in enumerate(axes[0])]
    for ax in axes[0, 1:]:
        ax.set_ylabel("")  # the rows are the same tokens in every panel: label them once
        ax.tick_params(labelleft=False)
    figure.colorbar(heatmaps[0].image, ax=axes[0].tolist(), shrink=0.85,
                    label="attention weight")
    heading = figure.suptitle(" ")
    # Lay out with every panel shown, so that hiding some later leaves the others in place.
    figure.draw_without_rendering()
    figure.set_layout_engine("none")

    def redraw(sequence, num_heads, d_out, new_weights):
        problem = head_split_problem(d_out, num_heads)
        if problem:
            raise ValueError(f"{problem} The picture below still shows the last valid setting.")
        order = list(SEQUENCE_ORDERS[sequence])
        labels = [TOKENS[i] for i in order]
        weights = multi_head_weights(inputs[order], d_out, num_heads, seed=seed + new_weights,
                                     weight_std=weight_std).numpy()
        for h, heatmap in enumerate(heatmaps):
            heatmap.ax.set_visible(h < num_heads)
            if h < num_heads:
                heatmap.update(weights[h], mask=mask)
                heatmap.ax.set_xticks(range(T), labels=labels, rotation=45, ha="right")
                heatmap.ax.set_yticks(range(T), labels=labels)
        heading.set_text(f"{sequence}: H = {num_heads} heads, each of head_dim = d_out / H = "
                         f"{d_out} / {num_heads} = {d_out // num_heads}   (weights seed "
                         f"{seed + new_weights})")

    return FigureExplorer(controls, figure, redraw)
