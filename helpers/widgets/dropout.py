"""Notebook 3: dropout rate, samples and their average."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch

from helpers.attention import (
    SelfAttention,
    attention_dropout,
    attention_weights,
    causal_mask,
    running_mean,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import Heatmap
from helpers.validation import check_tensor
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
)

DROPOUT_SAMPLE_COUNTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
# The sample counts n at which the error curve is drawn: log-spaced from 1 to the most
# samples offered, which is enough for a smooth curve on a log axis.
CURVE_COUNTS = np.unique(np.geomspace(1, DROPOUT_SAMPLE_COUNTS[-1], 300).round().astype(int))
ERROR_FLOOR = 1e-4  # a log axis cannot show 0: smaller differences are drawn at this height


def running_example_causal_weights(seed: int = 789) -> torch.Tensor:
    """The running example's causal weights (6, 6), from a SelfAttention(3, 2) built after
    torch.manual_seed(seed). The global random state is left as it was."""
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        module = SelfAttention(d_in=3, d_out=2)
        x = example_inputs()
        return attention_weights(module.W_query(x), module.W_key(x), is_causal=True)


def _dropout_heading(p: float) -> str:
    if p == 0.0:
        return "p = 0: nothing is dropped, so dropout changes nothing (as in eval mode)"
    if p == 1.0:
        return ("p = 1: every weight is dropped, the output is all zeros "
                "and no rescaling can bring it back")
    return (f"p = {p:.2f}: each weight is kept with probability {1 - p:.2f}; "
            f"kept weights are multiplied by 1/(1 − p) = {1 / (1 - p):.2f}")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class DropoutView:
    """What the dropout explorer shows. The "shown sample" is the last one averaged:
    sample number ``samples``."""

    p: float
    samples: int  # how many samples are averaged
    keep: np.ndarray  # (T_q, T_k) bool: the entries the shown sample kept
    keep_text: np.ndarray  # (T_q, T_k) "kept" or "drop" ("" where the mask hides the entry)
    keep_title: str
    dropped: np.ndarray  # (T_q, T_k) the shown sample: kept weights times 1/(1 - p), others 0
    scale_top: float  # the top of its colour scale: 1/(1 - p), the largest a weight can become
    dropped_title: str
    mean: np.ndarray  # (T_q, T_k) the average of the first ``samples`` samples
    mean_title: str
    counts: np.ndarray  # sample counts n along the error curve (CURVE_COUNTS)
    errors: np.ndarray  # max |average of the first n samples − weights| at each of counts
    error: float  # the same for n = samples
    guide: np.ndarray  # σ/√n at each of counts (σ: the spread of the noisiest single entry)
    guide_shown: bool  # False at p = 0 and p = 1, where the spread is 0
    error_title: str
    heading: str


def dropout_view(p: float, samples: int, resample: int, *, weights: torch.Tensor, mask=None,
                 seed: int = 0) -> DropoutView:
    """Dropout at rate ``p`` on ``weights`` (T_q, T_k), drawn DROPOUT_SAMPLE_COUNTS[-1]
    times from a ``torch.Generator`` seeded with ``seed + resample`` (``resample``: clicks
    on the resample button), and the average of the first ``samples`` of them. ``mask``
    (boolean, True = may attend) marks the entries that are attention weights at all."""
    p = round(float(p), 2)  # slider steps can arrive as 0.15000000000000002
    T_q, T_k = weights.shape
    allowed = np.ones((T_q, T_k), dtype=bool) if mask is None else \
        np.broadcast_to(torch.as_tensor(mask, dtype=torch.bool).numpy(), (T_q, T_k))
    n_max = DROPOUT_SAMPLE_COUNTS[-1]
    generator = torch.Generator().manual_seed(seed + resample)
    # Every sample at once, (n_max, T_q, T_k): the first n are the n averaged, whatever n.
    dropped, keep = attention_dropout(weights.expand(n_max, T_q, T_k), p, generator=generator)
    means = running_mean(dropped)  # (n_max, T_q, T_k): entry n - 1 averages the first n
    errors = (means - weights).abs().amax(dim=(-2, -1)).numpy()  # (n_max,)
    shown = samples - 1
    kept = keep[shown].numpy()
    # One sample's entry w is w / (1 - p) or 0: its spread is w * sqrt(p / (1 - p)).
    spread = float(weights.max()) * (p / (1.0 - p)) ** 0.5 if 0.0 < p < 1.0 else 0.0
    note = {0.0: " (nothing dropped: always 0)",
            1.0: " (everything dropped: the average stays 0)"}.get(p, "")
    return DropoutView(
        p=p, samples=samples, keep=kept,
        keep_text=np.where(allowed, np.where(kept, "kept", "drop"), "").astype(object),
        keep_title=(f"sample {samples} of {samples}: kept {int(kept[allowed].sum())} "
                    f"of {int(allowed.sum())} weights"),
        dropped=dropped[shown].numpy(), scale_top=1.0 if p == 1.0 else 1.0 / (1.0 - p),
        dropped_title=f"sample {samples} after dropout",
        mean=means[shown].numpy(), mean_title=f"average of {_plural(samples, 'sample')}",
        counts=CURVE_COUNTS, errors=errors[CURVE_COUNTS - 1], error=float(errors[shown]),
        guide=spread / np.sqrt(CURVE_COUNTS), guide_shown=spread > 0.0,
        error_title=(f"after {_plural(samples, 'sample')}: max |average − weights| = "
                     f"{errors[shown]:.4f}{note}"),
        heading=_dropout_heading(p))


class DropoutDrawing:
    """Top row: the weights without dropout, which entries the shown sample kept, and that
    sample after dropout (its own colour bar, 0 to 1/(1 - p)). Bottom row: the average of
    the samples, and how far it is from the weights as more samples are averaged (log-log,
    beside the σ/√n trend of an average of independent samples)."""

    def __init__(self, weights: torch.Tensor, mask=None, labels=TOKENS):
        T_q, T_k = weights.shape
        self.mask = mask
        self.figure = plt.figure(figsize=(13, 7.5), layout="constrained")
        plt.close(self.figure)
        grid = self.figure.add_gridspec(2, 3)
        clean_ax, keep_ax, dropped_ax = (self.figure.add_subplot(grid[0, i]) for i in range(3))
        mean_ax = self.figure.add_subplot(grid[1, 0])
        self.error_ax = self.figure.add_subplot(grid[1, 1:])
        label_kwargs = {"row_labels": list(labels), "col_labels": list(labels)}
        self.clean_map = Heatmap(clean_ax, weights, mask=mask, **label_kwargs,
                                 title="weights without dropout (eval mode)")
        self.keep_map = Heatmap(keep_ax, np.ones((T_q, T_k)), mask=mask, **label_kwargs)
        self.dropped_map = Heatmap(dropped_ax, weights, mask=mask, **label_kwargs)
        self.mean_map = Heatmap(mean_ax, weights, mask=mask, **label_kwargs)
        # Follows the sample's colour scale, which changes with p (a change of p redraws
        # the figure in full, for the new tick labels).
        self.dropped_bar = self.figure.colorbar(self.dropped_map.image, ax=dropped_ax,
                                                shrink=0.8, label="weight after dropout")
        # Averages of few samples can exceed 1: the arrow marks colours clipped at the top.
        # On the left edge, outside the left column it belongs to: between the columns it
        # would read as the middle panel's.
        self.figure.colorbar(self.mean_map.image, ax=[clean_ax, mean_ax], shrink=0.8,
                             location="left", extend="max", label="attention weight")
        zeros = np.zeros(len(CURVE_COUNTS))
        (self.error_line,) = self.error_ax.plot(CURVE_COUNTS, zeros + 1, color="tab:blue",
                                                label="max |average − weights|")
        (self.guide_line,) = self.error_ax.plot(
            CURVE_COUNTS, zeros + 1, color="grey", linestyle="--",
            label="σ/√n, σ = spread of one sample's noisiest entry")
        (self.marker,) = self.error_ax.plot([1], [1], "o", color="tab:red",
                                            label="samples averaged now")
        n_max = DROPOUT_SAMPLE_COUNTS[-1]
        self.error_ax.set(xscale="log", yscale="log", xlim=(0.8, n_max * 1.25),
                          ylim=(ERROR_FLOOR, 30), xlabel="number of dropout samples averaged, n",
                          ylabel="largest difference from the weights")
        self.error_ax.grid(True, which="major", alpha=0.3)
        self.error_ax.minorticks_off()
        # Below the curves' panel, not in it: a legend in a panel that changes is redrawn
        # with it on every change.
        self.figure.legend(handles=[self.error_line, self.guide_line, self.marker],
                           loc="outside lower right", ncols=3, fontsize=9, frameon=False)
        self.heading = self.figure.suptitle("", fontsize=12)

    def draw(self, view: DropoutView):
        self.keep_map.update(view.keep.astype(float), mask=self.mask, cell_text=view.keep_text)
        self.keep_map.ax.set_title(view.keep_title)
        # The colour scale first: the cell texts' colours are chosen from the cell colours.
        # The colour bar follows it (it redraws itself when the scale changes).
        self.dropped_map.image.set_clim(0.0, view.scale_top)
        self.dropped_map.update(view.dropped, mask=self.mask)
        self.dropped_map.ax.set_title(view.dropped_title)
        self.mean_map.update(view.mean, mask=self.mask)
        self.mean_map.ax.set_title(view.mean_title)
        self.error_line.set_data(view.counts, np.maximum(view.errors, ERROR_FLOOR))
        self.marker.set_data([view.samples], [max(view.error, ERROR_FLOOR)])
        self.guide_line.set_data(view.counts, view.guide)
        self.guide_line.set_visible(view.guide_shown)
        self.error_ax.set_title(view.error_title)
        self.heading.set_text(view.heading)


def dropout_explorer(weights=None, *, mask=None, labels=TOKENS,
                     seed: int = 0) -> FigureExplorer:
    """Notebook 03: dropout on a (T, T) matrix of attention weights, one sample at a time.

    Controls: the dropout rate p, how many dropout samples to average, and a "resample"
    button that draws a fresh set of samples. Panels: the weights without dropout; which
    entries the last sample kept; that sample's weights after dropout (kept ones scaled
    by 1/(1 - p), so that on average each weight stays what it was); the average of the
    samples; and how far that average is from the weights as more samples are averaged.
    ``mask`` (boolean, True = may attend) greys out the entries that are not attention
    weights at all, e.g. the causal mask's future.

    The picture depends only on (p, samples, clicks on resample, seed): the samples are
    drawn from a ``torch.Generator`` seeded with ``seed`` + clicks. Without ``weights``, the
    running example's causal weights are used, with the causal mask.
    """
    if weights is None:
        weights, mask = running_example_causal_weights(), causal_mask(len(TOKENS))
    check_tensor(weights, "weights", ndim=2)
    weights = weights.detach().clone()  # later changes to the caller's tensor change nothing
    controls = {
        "p": widgets.FloatSlider(
            value=0.5, min=0.0, max=1.0, step=0.05, readout_format=".2f",
            description="dropout rate p", continuous_update=False,
            style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
        "samples": widgets.SelectionSlider(
            options=DROPOUT_SAMPLE_COUNTS, value=50, description="samples averaged",
            continuous_update=False, style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
        "resample": widgets.Button(description="resample", icon="refresh",
                                   tooltip="draw a fresh set of dropout samples"),
    }
    return FigureExplorer(controls,
                          partial(dropout_view, weights=weights, mask=mask, seed=seed),
                          DropoutDrawing(weights, mask, labels), dpi=80)
