"""Training's pictures (notebook 08): a live monitor of a training run, and loss curves.

- ``TrainingMonitor``: a progress bar and the loss curve, updated while
  ``helpers.gpt.training.train`` runs (it calls ``update(step, loss)`` every step);
- ``plot_losses``: the losses of several runs on one plot, with baselines.

Kept apart from ``helpers.gpt``, whose model, data and training loop import no UI.
"""

from itertools import cycle

import ipywidgets as widgets

from helpers.plotting import new_figure
from helpers.rendering import FigureRenderer
from helpers.validation import check_positive_int

# Each baseline's colour and line style, in order: told apart by both, even where two
# baselines lie a hair apart (a uniform guess and bigram counts can).
BASELINE_STYLES = (("black", "--"), ("tab:brown", ":"), ("tab:purple", "-."),
                   ("tab:red", "--"))


def loss_figure(steps: int, baselines: dict = None, max_loss: float = 3.0):
    """A Figure and Axes for loss curves over ``steps`` steps, with ``baselines`` (a
    label: a loss) drawn as dashed lines; a baseline above ``max_loss`` is off the chart,
    and an arrow at the top edge says where it is."""
    figure = new_figure(figsize=(6.4, 3.2), layout="constrained")  # the caller shows it
    ax = figure.subplots()
    above = 0  # baselines off the chart so far, each arrow further left
    styles = cycle(BASELINE_STYLES)  # every baseline drawn, however many
    for (name, loss), (colour, style) in zip((baselines or {}).items(), styles, strict=False):
        label = f"{name} ({loss:.2f})"
        if loss <= max_loss:
            ax.axhline(loss, color=colour, ls=style, lw=1.5, label=label)
            continue
        above += 1
        ax.annotate(f"{label}: off the chart", xy=(1 - 0.3 * above, 1),
                    xytext=(1 - 0.3 * above, 0.86), xycoords="axes fraction", ha="center",
                    va="top", fontsize=8, color=colour,
                    arrowprops={"arrowstyle": "->", "color": colour})
    ax.set(xlim=(0, steps), ylim=(0, max_loss), xlabel="step",
           ylabel="loss (nats per letter)")
    return figure, ax


def plot_losses(curves: dict, baselines: dict = None, *, max_loss: float = 3.0):
    """The training losses of several runs on one plot; return the Figure.

    ``curves`` maps a label to the losses of every step (as ``train`` returns them);
    ``baselines`` maps a label to a loss drawn as a dashed line."""
    if not curves:
        raise ValueError("curves must map at least one label to a list of losses, got none")
    figure, ax = loss_figure(max(len(losses) for losses in curves.values()), baselines,
                             max_loss)
    for name, losses in curves.items():
        ax.plot(range(1, len(losses) + 1), losses, lw=1, label=name)
    ax.legend(loc="center right", fontsize=8)
    return figure


class TrainingMonitor(widgets.VBox):
    """A progress bar and the loss curve, updated while ``train`` runs.

    ``steps`` sets the bar's end and the curve's x-axis; ``reference`` maps a label to
    the losses of an earlier run, drawn for comparison (e.g. {"masked": losses});
    ``baselines`` maps a label to a loss drawn as a dashed line. The picture is redrawn
    every ``redraw_every`` steps (drawing costs more than a training step)."""

    def __init__(self, steps: int, *, label: str = "training loss", reference=None,
                 baselines=None, max_loss: float = 3.0, redraw_every: int = 25):
        self.steps = check_positive_int(steps, "steps")
        self.redraw_every = check_positive_int(redraw_every, "redraw_every")
        self.progress = widgets.IntProgress(value=0, min=0, max=steps, description="step 0")
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.figure, ax = loss_figure(steps, baselines, max_loss)
        for name, losses in (reference or {}).items():
            ax.plot(range(1, len(losses) + 1), losses, color="grey", alpha=0.6, lw=1,
                    label=name)
        (self.line,) = ax.plot([], [], color="C0", lw=1, label=label)
        legend = ax.legend(loc="center right", fontsize=8)
        # The curve changes; the frame and the legend are drawn over it.
        self.animated = [self.line, *ax.spines.values(), legend]
        self.losses = []
        self.renderer = FigureRenderer(self.figure)
        self.image.value = self.renderer.png(self.animated)
        super().__init__([widgets.HBox([self.progress, self.status]), self.image])

    def __repr__(self) -> str:
        """What a notebook shows where the widget cannot be drawn (the text/plain fallback,
        which ipywidgets 7 and 8 take from repr); a box's own repr lists all its children."""
        return (f"Training monitor for {self.steps} steps: run this cell to see its progress "
                f"bar and loss curve.")

    def update(self, step: int, loss: float):
        """Record the loss of ``step`` (1, 2, ...); redraw now and then and at the end."""
        self.losses.append(loss)
        # The bar moves in at most 100 steps: each move is a message to the browser, and
        # one per training step would flood the channel that carries outputs.
        if step % -(-self.steps // 100) == 0 or step == self.steps:  # steps / 100, rounded up
            self.progress.value = step
            self.progress.description = f"step {step}"
        if step % self.redraw_every == 0 or step == self.steps:
            self.status.value = f"loss {loss:.3f}"
            self.line.set_data(range(1, len(self.losses) + 1), self.losses)
            self.image.value = self.renderer.png(self.animated)
