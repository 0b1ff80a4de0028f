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
from contextlib import contextmanager

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Rectangle

from helpers.attention import projected_attention_weights
from helpers.data import TOKENS, example_inputs
from helpers.plotting import FigureRenderer, Heatmap

CONTROL_STYLE = {"description_width": "initial"}
CONTROL_LAYOUT = widgets.Layout(width="auto", min_width="260px")
# Every explorer carries this CSS class (browser tests find explorers by it) and this
# style: controls large enough to read on a projector.
EXPLORER_CLASS = "course-explorer"
EXPLORER_CSS = f"""<style>
.{EXPLORER_CLASS} {{
  --jp-widgets-font-size: 16px;
  --jp-widgets-inline-height: 34px;
  --jp-widgets-slider-handle-size: 20px;
}}
.{EXPLORER_CLASS} .widget-label, .{EXPLORER_CLASS} .widget-readout,
.{EXPLORER_CLASS} select, .{EXPLORER_CLASS} button {{ font-size: 16px; }}
.{EXPLORER_CLASS} .widget-checkbox input {{ width: 20px; height: 20px; }}
.{EXPLORER_CLASS} > .widget-hbox {{ gap: 0.5em 2em; flex-wrap: wrap; }}
.{EXPLORER_CLASS} .slider-container {{ min-width: 200px; }}
</style>"""


@contextmanager
def _one_torch_thread():
    """Run PyTorch single-threaded for a moment. An explorer computes on tiny tensors,
    where waking a second thread costs more than the work: on a busy or CPU-capped
    machine (Binder), 10 to 300 ms instead of under 1 ms per update."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


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
        self._renderer = FigureRenderer(figure, dpi=dpi)
        self.image = widgets.Image(format="png")
        self.message = widgets.HTML()
        self.message.add_class(f"{EXPLORER_CLASS}-message")
        self.last_error = None
        self.clicks = {name: 0 for name, control in controls.items()
                       if isinstance(control, widgets.Button)}
        super().__init__([widgets.HTML(EXPLORER_CSS), widgets.HBox(list(controls.values())),
                          self.message, self.image])
        self.add_class(EXPLORER_CLASS)
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
            with _one_torch_thread():
                self._redraw(**self.values())
            png = self._renderer.png()
        except Exception as error:  # shown to the learner, not swallowed
            self.last_error = error
            self.message.value = (
                f"<span style='color:#b00020'>{html.escape(type(error).__name__)}: "
                f"{html.escape(str(error))}</span>"
            )
            return
        self.last_error = None
        self.message.value = ""
        self.image.value = png


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
            options=[2 ** n for n in range(1, 11)], value=2, description="d_k (query/key size)",
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
