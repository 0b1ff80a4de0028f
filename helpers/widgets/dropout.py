"""Notebook 3: dropout rate, samples and their average."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import numpy as np
import torch

from helpers.attention import (
    attention_dropout,
    attention_weights,
    causal_mask,
)
from helpers.attention.demos import running_mean
from helpers.data import REFERENCE_SEED, TOKENS, example_queries_and_keys
from helpers.plotting import FIGURE_WIDTH, TEXT_SIZE, TITLE_SIZE, Heatmap, new_figure
from helpers.validation import check_tensor
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
    closes_the_one_before,
)

DROPOUT_SAMPLE_COUNTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
# The sample counts n at which the error curve is drawn: log-spaced from 1 to the most
# samples offered, which is enough for a smooth curve on a log axis.
CURVE_COUNTS = np.unique(np.geomspace(1, DROPOUT_SAMPLE_COUNTS[-1], 300).round().astype(int))
ERROR_FLOOR = 1e-4  # a log axis cannot show 0: smaller differences are drawn at this height
# What the right-hand heatmap can show, beside the weights without dropout.
SHOWN = {"sample": "the last sample", "average": "their average"}


def running_example_causal_weights(seed: int = REFERENCE_SEED) -> torch.Tensor:
    """The running example's causal weights (6, 6) (``helpers.data.example_queries_and_keys``);
    the global random state is left as it was."""
    return attention_weights(*example_queries_and_keys(seed), is_causal=True)


def _dropout_heading(p: float) -> str:
    if p == 0.0:
        return "p = 0: nothing is dropped, so dropout changes nothing (as in eval mode)"
    if p == 1.0:
        return "p = 1: every weight is dropped; the output is all zeros, no rescaling helps"
    return (f"p = {p:.2f}: each weight kept with probability {1 - p:.2f}, "
            f"kept ones × 1/(1 − p) = {1 / (1 - p):.2f}")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class DropoutView:
    """What the dropout explorer shows. The "shown sample" is the last one averaged:
    sample number ``samples``."""

    p: float
    samples: int  # how many samples are averaged
    show: str  # which the right-hand panel shows: "sample" (the shown sample) or "average"
    keep: np.ndarray  # (T_q, T_k) bool: the entries the shown sample kept
    dropped: np.ndarray  # (T_q, T_k) the shown sample: kept weights times 1/(1 - p), others 0
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


def dropout_view(p: float, samples: int, resample: int, show: str = "sample", *,
                 weights: torch.Tensor, mask=None, seed: int = 0) -> DropoutView:
    """Dropout at rate ``p`` on ``weights`` (T_q, T_k), drawn DROPOUT_SAMPLE_COUNTS[-1]
    times from a ``torch.Generator`` seeded with ``seed + resample`` (``resample``: clicks
    on the resample button), and the average of the first ``samples`` of them. ``mask``
    (boolean, True = may attend) marks the entries that are attention weights at all.
    ``show`` ("sample" or "average") says which of the two the picture shows."""
    if show not in SHOWN:
        raise ValueError(f"show must be one of {list(SHOWN)}, got {show!r}")
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
    # Copies of the shown sample and average: views would keep every sample in memory.
    kept, sample, mean = (values[shown].clone().numpy() for values in (keep, dropped, means))
    # One sample's entry w is w / (1 - p) or 0: its spread is w * sqrt(p / (1 - p)).
    spread = float(weights.max()) * (p / (1.0 - p)) ** 0.5 if 0.0 < p < 1.0 else 0.0
    note = {0.0: " (nothing dropped: always 0)",
            1.0: " (everything dropped: the average stays 0)"}.get(p, "")
    return DropoutView(
        p=p, samples=samples, show=show, keep=kept, dropped=sample,
        dropped_title=(f"sample {samples} of {samples}: kept {int(kept[allowed].sum())} "
                       f"of {int(allowed.sum())}"),
        mean=mean, mean_title=f"average of {_plural(samples, 'sample')}",
        counts=CURVE_COUNTS, errors=errors[CURVE_COUNTS - 1], error=float(errors[shown]),
        guide=spread / np.sqrt(CURVE_COUNTS), guide_shown=spread > 0.0,
        error_title=(f"after {_plural(samples, 'sample')}: max |average − weights| = "
                     f"{errors[shown]:.4f}{note}"),
        heading=_dropout_heading(p))


class DropoutDrawing:
    """Above, on one colour scale: the weights without dropout, and beside them, as the
    view says, the last sample after dropout (kept weights times 1/(1 - p), dropped ones
    0; colours clipped at 1, values written) or the average of the samples. Below: how
    far that average is from the weights as more samples are averaged (log-log, beside
    the σ/√n trend of an average of independent samples), beside its legend.

    At FIGURE_WIDTH (helpers.plotting says why) two heatmaps whose cells hold their
    values fit; three would not."""

    def __init__(self, weights: torch.Tensor, mask=None, labels=TOKENS):
        self.mask = mask
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 6.1), layout="constrained")
        rows = self.figure.add_gridspec(2, 1, height_ratios=[2.1, 1])
        top = rows[0].subgridspec(1, 2)
        bottom = rows[1].subgridspec(1, 2, width_ratios=[1.9, 1])
        clean_ax, shown_ax = (self.figure.add_subplot(top[0, i]) for i in range(2))
        self.error_ax = self.figure.add_subplot(bottom[0, 0])
        legend_place = self.figure.add_subplot(bottom[0, 1])
        tokens = list(labels)
        self.clean_map = Heatmap(clean_ax, weights, mask=mask, row_labels=tokens,
                                 col_labels=tokens, title="no dropout (eval mode)")
        self.shown_map = Heatmap(shown_ax, weights, mask=mask, row_labels=tokens,
                                 col_labels=tokens)
        # One colour scale: a kept weight after dropout (up to 1/(1 - p)) or an average of
        # few samples can exceed 1, and the arrow marks colours clipped at the top.
        colorbar = self.figure.colorbar(self.clean_map.image, ax=[clean_ax, shown_ax],
                                        extend="max", shrink=0.9)
        colorbar.set_label("attention weight", fontsize=TEXT_SIZE)
        colorbar.ax.tick_params(labelsize=TEXT_SIZE)
        zeros = np.zeros(len(CURVE_COUNTS))
        (self.error_line,) = self.error_ax.plot(CURVE_COUNTS, zeros + 1, color="tab:blue",
                                                label="max |average − weights|")
        (self.guide_line,) = self.error_ax.plot(
            CURVE_COUNTS, zeros + 1, color="grey", linestyle="--",
            label="σ/√n, σ: spread of one\nsample's noisiest entry")
        (self.marker,) = self.error_ax.plot([1], [1], "o", color="tab:red",
                                            label="samples averaged now")
        n_max = DROPOUT_SAMPLE_COUNTS[-1]
        self.error_ax.set(xscale="log", yscale="log", xlim=(0.8, n_max * 1.25),
                          ylim=(ERROR_FLOOR, 30))
        self.error_ax.set_xlabel("dropout samples averaged, n", fontsize=TEXT_SIZE)
        self.error_ax.set_ylabel("largest\ndifference", fontsize=TEXT_SIZE)
        self.error_ax.tick_params(labelsize=TEXT_SIZE)
        self.error_ax.grid(True, which="major", alpha=0.3)
        self.error_ax.minorticks_off()
        self.error_ax.set_title(" ", fontsize=TEXT_SIZE)
        legend = self.figure.legend(handles=[self.error_line, self.guide_line, self.marker],
                                    loc="center", fontsize=TEXT_SIZE, frameon=False)
        self.heading = self.figure.suptitle(" ", fontsize=TITLE_SIZE)
        shown_ax.set_title("sample 5000 of 5000: kept 21 of 21", fontsize=TITLE_SIZE)
        # Laid out once (with the longest title), and kept; then the legend goes in the
        # place kept for it: a figure legend never changes, so it stays in the background.
        self.figure.get_layout_engine().execute(self.figure)
        self.figure.set_layout_engine("none")
        place = legend_place.get_position()
        legend.set_bbox_to_anchor((place.x0 + place.width / 2, place.y0 + place.height / 2),
                                  transform=self.figure.transFigure)
        legend_place.remove()
        # What draw changes, and each panel's frame, drawn over its cells and lines.
        self.animated = [*self.shown_map.artists(), shown_ax.title, self.error_line,
                         self.guide_line, self.marker, self.error_ax.title, *(
                             spine for ax in (shown_ax, self.error_ax)
                             for spine in ax.spines.values()), self.heading]

    def draw(self, view: DropoutView):
        sample = view.show == "sample"
        self.shown_map.update(view.dropped if sample else view.mean, mask=self.mask)
        self.shown_map.ax.set_title(view.dropped_title if sample else view.mean_title,
                                    fontsize=TITLE_SIZE)
        self.error_line.set_data(view.counts, np.maximum(view.errors, ERROR_FLOOR))
        self.marker.set_data([view.samples], [max(view.error, ERROR_FLOOR)])
        self.guide_line.set_data(view.counts, view.guide)
        self.guide_line.set_visible(view.guide_shown)
        self.error_ax.set_title(view.error_title, fontsize=TEXT_SIZE)
        self.heading.set_text(view.heading)


@closes_the_one_before
def dropout_explorer(weights=None, *, mask=None, labels=TOKENS,
                     seed: int = 0) -> FigureExplorer:
    """Notebook 03: dropout on a (T, T) matrix of attention weights, one sample at a time.

    Controls: the dropout rate p, how many dropout samples to average, which of the last
    sample and the average to show, and a "resample" button that draws a fresh set of
    samples. Panels, on one colour scale: the weights without dropout; beside them the last
    sample's weights after dropout (kept ones scaled by 1/(1 - p), so that on average each
    weight stays what it was; dropped ones 0) or the average of the samples; below, how far
    that average is from the weights as more samples are averaged.
    ``mask`` (boolean, True = may attend) greys out the entries that are not attention
    weights at all, e.g. the causal mask's future.

    The picture depends only on (p, samples, show, clicks on resample, seed): the samples are
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
        "show": widgets.ToggleButtons(
            options=[(label, key) for key, label in SHOWN.items()], value="sample",
            description="show", style=CONTROL_STYLE),
        "resample": widgets.Button(description="resample", icon="refresh",
                                   tooltip="draw a fresh set of dropout samples"),
    }
    return FigureExplorer(controls,
                          partial(dropout_view, weights=weights, mask=mask, seed=seed),
                          DropoutDrawing(weights, mask, labels))
