"""Notebook 3: dropout rate, samples and their average."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.transforms import offset_copy

from helpers.attention import (
    SelfAttention,
    attention_dropout,
    attention_weights,
    causal_mask,
    running_mean,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import CMAP, Heatmap
from helpers.validation import check_tensor
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
)

DROPOUT_SAMPLE_COUNTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
_ERROR_FLOOR = 1e-4  # a log axis cannot show 0; smaller differences are drawn here


def _dropout_heading(p: float) -> str:
    if p == 0.0:
        return "p = 0: nothing is dropped, so dropout changes nothing (as in eval mode)"
    if p == 1.0:
        return ("p = 1: every weight is dropped, the output is all zeros "
                "and no rescaling can bring it back")
    return (f"p = {p:.2f}: each weight is kept with probability {1 - p:.2f}; "
            f"kept weights are multiplied by 1/(1 − p) = {1 / (1 - p):.2f}")


SCALE_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)  # where a 0-to-1 colour bar is labelled


def _scale_labels(colour_bar) -> list:
    """Empty texts beside a 0-to-1 colour bar's ticks (at SCALE_FRACTIONS), placed as its
    tick labels would be, for labelling it on a scale that changes. Texts, not tick
    labels: new tick labels change the axis, and a changed axis is drawn in full."""
    colour_bar.set_ticks(SCALE_FRACTIONS, labels=[""] * len(SCALE_FRACTIONS))
    ax = colour_bar.ax
    pad = plt.rcParams["ytick.major.size"] + plt.rcParams["ytick.major.pad"]
    beside = offset_copy(ax.transAxes, fig=ax.figure, x=pad, units="points")
    return [ax.text(1.0, fraction, "", transform=beside, ha="left", va="center",
                    fontsize=plt.rcParams["ytick.labelsize"]) for fraction in SCALE_FRACTIONS]


def _running_example_causal_weights() -> torch.Tensor:
    """The running example's causal weights (6, 6), SelfAttention(3, 2) after seed 789."""
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(789)
        module = SelfAttention(d_in=3, d_out=2)
        x = example_inputs()
        return attention_weights(module.W_query(x), module.W_key(x), is_causal=True)


def dropout_explorer(weights=None, *, mask=None, labels=TOKENS,
                     seed: int = 0) -> FigureExplorer:
    """Notebook 03: dropout on a (T, T) matrix of attention weights, one sample at a time.

    Controls: the dropout rate p, how many dropout samples to average, and a "resample"
    button that draws a fresh set of samples. Panels: the weights without dropout; which
    entries the last sample kept; that sample's weights after dropout (kept ones scaled
    by 1/(1 - p)); the average of all the samples; and how far that average is from the
    weights as more samples are averaged. ``mask`` (boolean, True = may attend) greys
    out the entries that are not attention weights at all, e.g. the causal mask's future.

    The picture depends only on (p, samples, clicks on resample, seed): the samples are
    drawn from a ``torch.Generator`` seeded with ``seed`` + clicks. Without ``weights``, the
    running example's causal weights are used, with the causal mask.
    """
    if weights is None:
        weights, mask = _running_example_causal_weights(), causal_mask(len(TOKENS))
    check_tensor(weights, "weights", ndim=2)
    weights = weights.detach().clone()
    T_q, T_k = weights.shape
    allowed = torch.ones(T_q, T_k, dtype=torch.bool) if mask is None else \
        torch.as_tensor(mask, dtype=torch.bool).broadcast_to(T_q, T_k)
    n_max = DROPOUT_SAMPLE_COUNTS[-1]
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
    figure = plt.figure(figsize=(13, 7.5), layout="constrained")
    plt.close(figure)
    grid = figure.add_gridspec(2, 3)
    clean_ax, keep_ax, dropped_ax = (figure.add_subplot(grid[0, i]) for i in range(3))
    mean_ax, error_ax = figure.add_subplot(grid[1, 0]), figure.add_subplot(grid[1, 1:])
    label_kwargs = {"row_labels": list(labels), "col_labels": list(labels)}
    Heatmap(clean_ax, weights, mask=mask, title="weights without dropout (eval mode)",
            **label_kwargs)
    keep_map = Heatmap(keep_ax, np.ones((T_q, T_k)), mask=mask, **label_kwargs)
    dropped_map = Heatmap(dropped_ax, weights, mask=mask, value_range=(0.0, 2.0),
                          **label_kwargs)
    mean_map = Heatmap(mean_ax, weights, mask=mask, **label_kwargs)
    # The scale of this panel changes with p; its colour bar stays and only the texts
    # beside its ticks change (a colour bar that follows the image is rebuilt each time).
    dropped_bar = figure.colorbar(ScalarMappable(Normalize(0.0, 1.0), CMAP), ax=dropped_ax,
                                  shrink=0.8)
    scale_texts = _scale_labels(dropped_bar)
    dropped_bar.set_label("weight after dropout", labelpad=30)  # beside the texts
    # Averages of few samples can exceed 1: the arrow marks colours clipped at the top.
    figure.colorbar(mean_map.image, ax=[clean_ax, mean_ax], shrink=0.8, extend="max",
                    label="attention weight")
    # Log-spaced sample counts are enough for the curve and much quicker to draw.
    counts = np.unique(np.geomspace(1, n_max, 300).round().astype(int))
    (error_line,) = error_ax.plot(counts, np.ones(len(counts)), color="tab:blue",
                                  label="max |average − weights|")
    (guide_line,) = error_ax.plot(counts, np.ones(len(counts)), color="grey", linestyle="--",
                                  label="σ/√n, σ = spread of one sample's noisiest entry")
    (marker,) = error_ax.plot([1], [1], "o", color="tab:red", label="samples averaged now")
    error_ax.set(xscale="log", yscale="log", xlim=(0.8, n_max * 1.25), ylim=(_ERROR_FLOOR, 30),
                 xlabel="number of dropout samples averaged, n",
                 ylabel="largest difference from the weights")
    error_ax.grid(True, which="major", alpha=0.3)
    error_ax.minorticks_off()
    # Above the grid, under the curves: the curves are redrawn on every change, and a
    # legend over them would have to be redrawn too.
    error_ax.legend(loc="lower left", fontsize=9).set_zorder(1.9)
    heading = figure.suptitle("", fontsize=12)

    drawn = {}  # the samples of the last (p, resample): key, (dropped, keep, means, errors)

    def redraw(p, samples, resample):
        p = round(float(p), 2)  # slider steps can arrive as 0.15000000000000002
        if drawn.get("key") != (p, resample):  # a new number of samples reuses them
            generator = torch.Generator().manual_seed(seed + resample)
            # n_max samples at once, (n_max, T_q, T_k); the first n are the n averaged.
            dropped, keep = attention_dropout(weights.expand(n_max, T_q, T_k), p,
                                              generator=generator)
            means = running_mean(dropped)
            errors = (means - weights).abs().amax(dim=(-2, -1)).numpy()  # (n_max,)
            drawn.update(key=(p, resample), samples=(dropped, keep, means, errors))
        dropped, keep, means, errors = drawn["samples"]
        last = samples - 1
        keep_map.update(keep[last].double(), mask=mask, cell_text=np.where(
            allowed.numpy(), np.where(keep[last].numpy(), "kept", "drop"), ""))
        # "latest sample", not its number: the number is in the slider and the two
        # panels below; titles that change less often are drawn from cached text.
        keep_ax.set_title(f"latest sample: kept {int(keep[last][allowed].sum())} "
                          f"of {int(allowed.sum())} weights")
        top = 1.0 if p == 1.0 else 1.0 / (1.0 - p)
        dropped_map.image.set_clim(0.0, top)
        for text, fraction in zip(scale_texts, SCALE_FRACTIONS, strict=True):
            text.set_text(f"{top * fraction:.2f}")
        dropped_map.update(dropped[last], mask=mask)
        dropped_ax.set_title(f"latest sample after dropout (colour scale 0 to {top:.2f})")
        mean_map.update(means[last], mask=mask)
        mean_ax.set_title(f"average of {samples} sample{'s' if samples > 1 else ''}")
        error_line.set_ydata(np.maximum(errors[counts - 1], _ERROR_FLOOR))
        marker.set_data([samples], [max(errors[last], _ERROR_FLOOR)])
        spread = float(weights.max()) * (p / (1.0 - p)) ** 0.5 if 0.0 < p < 1.0 else 0.0
        guide_line.set_ydata(spread / np.sqrt(counts))
        guide_line.set_visible(spread > 0.0)
        note = {0.0: " (nothing dropped: always 0)",
                1.0: " (everything dropped: the average stays 0)"}.get(p, "")
        error_ax.set_title(f"after {samples} sample{'s' if samples > 1 else ''}: "
                           f"max |average − weights| = {errors[last]:.4f}{note}")
        heading.set_text(_dropout_heading(p))

    return FigureExplorer(controls, figure, redraw, dpi=80)
