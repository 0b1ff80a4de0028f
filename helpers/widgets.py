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
from matplotlib.patches import Patch, Rectangle

from helpers.attention import (
    CausalAttention,
    SelfAttention,
    attention_dropout,
    attention_scores,
    attention_weights,
    causal_mask,
    head_split_problem,
    masked_weights_by_neg_inf,
    masked_weights_by_renormalising,
    multi_head_weights,
    padded_causal_weights,
    padding_mask,
    projected_attention_weights,
    running_mean,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import CMAP, MASKED_COLOUR, NAN_COLOUR, FigureRenderer, Heatmap
from helpers.validation import check_tensor

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
    a traceback lost in the log. ``redraw`` may return a short text, shown above the
    picture as guidance (e.g. "choose a d_out that H divides"); the picture still updates.
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
        self.notice = widgets.HTML()  # what redraw returns: guidance, not an error
        self.notice.add_class(f"{EXPLORER_CLASS}-notice")
        self.last_error = None
        self.clicks = {name: 0 for name, control in controls.items()
                       if isinstance(control, widgets.Button)}
        super().__init__([widgets.HTML(EXPLORER_CSS), widgets.HBox(list(controls.values())),
                          self.message, self.notice, self.image])
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
                notice = self._redraw(**self.values())
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
        self.notice.value = f"<b>{html.escape(notice)}</b>" if notice else ""
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
    bar_ax.axhline(1 / T, color="grey", linestyle="--")
    bar_ax.text(T - 0.5, 1 / T, f"uniform, 1/{T} ", color="grey", ha="right", va="bottom")

    def redraw(query, d_k, scaled):
        weights = projected_attention_weights(x, d_k, scaled=scaled, seed=seed).numpy()
        heatmap.update(weights)
        heat_ax.set_title(f"d_k = {d_k}, {'scaled' if scaled else 'not scaled'}: "
                          f"largest weight {weights.max(-1).mean():.2f} on average")
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


# ---------------------------------------------------------------- notebook 02: causal masking

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
    faders = [ax.imshow(np.zeros((T_max, T_max, 4))) for ax in axes[:3]]
    outlines = [ax.add_patch(Rectangle((-0.5, -0.5), T_max, 1, fill=False, edgecolor="red",
                                       linewidth=2.5)) for ax in axes[:3]]

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
    sums_legend = sum_ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8)
    figure.legend(handles=[
        Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked: a key after the query"),
        Patch(facecolor="white", edgecolor="grey", label="not in the sequence (beyond T)"),
        Patch(facecolor="none", edgecolor="red", linewidth=2, label="the chosen query row"),
    ], loc="outside lower center", ncols=3, fontsize=9)
    caption = figure.suptitle("", fontsize=10)

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
            heatmap.update(padded, mask=cell_mask)
        for i in range(T):
            for j in range(i + 1, T):
                heatmaps[1].texts[i][j].set_text(blocked_text)
                heatmaps[1].texts[i][j].set_color("black")
        outside = np.zeros((T_max, T_max, 4))
        outside[~inside] = OUTSIDE_COLOUR
        for fader in faders:
            fader.set_data(outside)
        for ax in axes[:3]:
            for k, label in enumerate(ax.get_xticklabels()):
                label.set_color("black" if k < T else "#bbbbbb")
            for k, label in enumerate(ax.get_yticklabels()):
                label.set_color("black" if k < T else "#bbbbbb")
        for k, label in enumerate(sum_ax.get_yticklabels()):
            label.set_color("black" if k < T else "#bbbbbb")
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
        for artist in [*before_bars, sums_legend.legend_handles[0], sums_legend.get_texts()[0]]:
            artist.set_visible(strategy == "renormalise")

        row = weights[query, : query + 1]
        terms = " + ".join(f"{w:.2f}" for w in row.tolist())
        n_future = T - 1 - query
        if strategy == "renormalise":
            kept = float(middle[query].sum())
            how = (f"softmax over all {T} keys leaves {kept:.2f} on the allowed ones; "
                   f"divided by {kept:.2f}")
        else:
            how = (f"exp(-inf) = 0 for the {n_future} later key{'s' if n_future != 1 else ''}; "
                   f"one softmax over the {query + 1} allowed")
        caption.set_text(f"query '{TOKENS[query]}' (row {query}): {how}:  {terms} = "
                         f"{float(row.sum()):.2f}")

    return FigureExplorer(controls, figure, redraw)


# ---------------------------------------------------------------- notebook 03: dropout

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
    figure = plt.figure(figsize=(13, 8.6), layout="constrained")
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
    figure.colorbar(dropped_map.image, ax=dropped_ax, shrink=0.8, label="weight after dropout")
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
    error_ax.legend(loc="lower left", fontsize=9)
    heading = figure.suptitle("", fontsize=12)

    def redraw(p, samples, resample):
        p = round(float(p), 2)  # slider steps can arrive as 0.15000000000000002
        generator = torch.Generator().manual_seed(seed + resample)
        # n_max samples at once, (n_max, T_q, T_k); the first n are the n averaged.
        dropped, keep = attention_dropout(weights.expand(n_max, T_q, T_k), p,
                                          generator=generator)
        means = running_mean(dropped)
        errors = (means - weights).abs().amax(dim=(-2, -1)).numpy()  # (n_max,)
        last = samples - 1
        keep_map.update(keep[last].double(), mask=mask)
        for i, row in enumerate(keep_map.texts):
            for j, text in enumerate(row):
                if text.get_text():  # not a masked-out entry
                    text.set_text("kept" if keep[last, i, j] else "drop")
        keep_ax.set_title(f"sample {samples}: kept {int(keep[last][allowed].sum())} "
                          f"of {int(allowed.sum())} weights")
        top = 1.0 if p == 1.0 else 1.0 / (1.0 - p)
        dropped_map.image.set_clim(0.0, top)
        dropped_map.update(dropped[last], mask=mask)
        dropped_ax.set_title(f"sample {samples} after dropout (colour scale 0 to {top:.2f})")
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


# ---------------------------------------------------------------- notebook 06: padding masks

PAD_ID = 0
PADDING_SEQUENCE_STARTS = (0, 4, 2)  # sequence b reads the running example from this token on
FULLY_MASKED_CHOICES = {
    "nan": "NaN (plain softmax of -inf)",
    "zeros": "zeros (PyTorch, helpers)",
    "uniform": "uniform (finite fill finfo.min)",
}


def padded_example_ids(lengths, T: int, *, side: str = "right") -> torch.Tensor:
    """Token ids (B, T) of a padded batch of the running example's tokens, pad id 0.

    Token ids 1..6 are the running example's tokens (id = index in TOKENS + 1). Sequence b
    holds ``lengths[b]`` tokens read cyclically from token ``PADDING_SEQUENCE_STARTS[b]``:
    "Your journey ...", "one step Your ...", "starts with one ...".
    """

    is_token = padding_mask(list(lengths), T, side=side)  # (B, T), checks lengths and side
    if len(lengths) > len(PADDING_SEQUENCE_STARTS):
        raise ValueError(f"at most {len(PADDING_SEQUENCE_STARTS)} sequences, got {len(lengths)}")
    ids = torch.full(is_token.shape, PAD_ID)
    for b, length in enumerate(lengths):
        start = PADDING_SEQUENCE_STARTS[b]
        tokens = [(start + k) % len(TOKENS) + 1 for k in range(length)]
        ids[b, is_token[b]] = torch.tensor(tokens, dtype=ids.dtype)
    return ids


def padded_example_embeddings(ids: torch.Tensor) -> torch.Tensor:
    """(B, T) token ids -> (B, T, 3) embeddings: the running example's, zeros for padding."""
    table = torch.cat([torch.zeros(1, 3), example_inputs()])  # row 0 is the padding token
    return table[ids]


def padding_explorer(seed: int = 123) -> FigureExplorer:
    """Notebook 06: causal mask, padding mask, their combination and the weights.

    Three sequences of the running example's tokens, padded to T = 6 on the chosen side
    (pad id 0, embedded as zeros), go through the query and key projections of a
    ``CausalAttention(3, 2)`` built after ``torch.manual_seed(seed)``. Controls: each
    sequence's length, the padding side, whether the padding mask hides padded keys
    (columns) or padded queries (rows), what a row with no allowed key becomes, and which
    sequence the two right-hand panels show. Panels: the causal mask; the batch, padding
    greyed; the combined mask of the shown sequence; its weights, NaN cells in orange.
    """

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = CausalAttention(d_in=3, d_out=2, context_length=len(TOKENS))
    T = len(TOKENS)
    B = len(PADDING_SEQUENCE_STARTS)
    # A redraw takes a few tenths of a second: redraw when the slider is let go.
    slider = {"min": 0, "max": T, "continuous_update": False, "style": CONTROL_STYLE,
              "layout": widgets.Layout(width="auto", min_width="230px")}
    controls = {
        "length_0": widgets.IntSlider(value=6, description="length of sequence 0", **slider),
        "length_1": widgets.IntSlider(value=2, description="length of sequence 1", **slider),
        "length_2": widgets.IntSlider(value=3, description="length of sequence 2", **slider),
        "side": widgets.ToggleButtons(options=["right", "left"], value="left",
                                      description="padding side", style=CONTROL_STYLE),
        "masked": widgets.ToggleButtons(
            options=[("keys (columns)", "keys"), ("queries (rows)", "queries")], value="keys",
            description="padding mask hides", style=CONTROL_STYLE),
        "fully_masked": widgets.Dropdown(
            options=[(label, key) for key, label in FULLY_MASKED_CHOICES.items()],
            value="nan", description="rows with no key", style=CONTROL_STYLE,
            layout=widgets.Layout(width="auto", min_width="320px")),
        "shown": widgets.Dropdown(options=[(f"sequence {b}", b) for b in range(B)], value=1,
                                  description="show", style=CONTROL_STYLE),
    }
    # A fixed layout with room for the longest token labels: the labels change with the
    # controls, and a layout engine would move the panels about between redraws.
    figure, axes = plt.subplots(1, 4, figsize=(15.5, 4.7))
    figure.subplots_adjust(left=0.04, right=0.935, bottom=0.27, top=0.84, wspace=0.5)
    plt.close(figure)
    causal_ax, batch_ax, combined_ax, weight_ax = axes
    positions = list(range(T))
    causal = causal_mask(T)
    # Masks are drawn in one mid colour of the scale (value 1 on a 0..2 scale), so that an
    # allowed cell does not look like a weight of 1.
    mask_range = (0.0, 2.0)
    causal_map = Heatmap(causal_ax, causal.double(), mask=causal, value_range=mask_range,
                         title="causal mask (T, T)")
    for i, row in enumerate(causal_map.texts):
        for j, text in enumerate(row):
            text.set_text("✓" if causal[i, j] else "")
            text.set_color("white")
    batch_map = Heatmap(batch_ax, np.ones((B, T)), annotate=True, value_range=mask_range,
                        row_labels=[f"seq {b}" for b in range(B)], col_labels=positions,
                        title="padding mask (B, T): the batch")
    batch_ax.set_xlabel("position")
    batch_ax.set_ylabel("sequence")
    for row in batch_map.texts:
        for text in row:
            text.set_fontsize(7)
    shown_outline = batch_ax.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False,
                                                 edgecolor="red", linewidth=2.5))
    combined_map = Heatmap(combined_ax, np.ones((T, T)), value_range=mask_range)
    weight_map = Heatmap(weight_ax, np.zeros((T, T)))
    colour_ax = figure.add_axes((0.955, 0.3, 0.01, 0.5))  # beside, not taken from, the weights
    figure.colorbar(weight_map.image, cax=colour_ax, label="attention weight")
    figure.legend(handles=[
        Patch(facecolor=plt.get_cmap(CMAP)(0.5), edgecolor="grey",
              label="✓ may attend / real token"),
        Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked / padding"),
        Patch(facecolor=NAN_COLOUR, edgecolor="grey", label="NaN"),
        Patch(facecolor="none", edgecolor="red", linewidth=2, label="the sequence shown"),
    ], loc="lower center", ncols=4, fontsize=9)
    caption = figure.suptitle("", fontsize=11)

    def redraw(length_0, length_1, length_2, side, masked, fully_masked, shown):
        lengths = [length_0, length_1, length_2]
        ids = padded_example_ids(lengths, T, side=side)  # (B, T)
        is_token = ids != PAD_ID  # (B, T)
        x = padded_example_embeddings(ids)  # (B, T, d_in)
        with torch.no_grad():
            scores = attention_scores(module.W_query(x), module.W_key(x))  # (B, T, T)
        allowed, weights = padded_causal_weights(scores, is_token, masked=masked,
                                                 fully_masked=fully_masked)
        words = [[TOKENS[i - 1] if i != PAD_ID else "pad" for i in row] for row in ids.tolist()]

        batch_map.update(np.ones((B, T)), mask=is_token)
        for b, row in enumerate(batch_map.texts):
            for j, text in enumerate(row):
                text.set_text(words[b][j])
                text.set_color("white" if is_token[b, j] else "#666666")
        shown_outline.set_y(shown - 0.5)

        labels = [f"{j}:{w}" for j, w in enumerate(words[shown])]
        for ax in (combined_ax, weight_ax):
            ax.set_xticks(positions, labels=labels, rotation=45, ha="right")
            ax.set_yticks(positions, labels=labels)
        seq_allowed = allowed[shown]  # (T, T)
        combined_map.update(seq_allowed.double(), mask=seq_allowed)
        for i, row in enumerate(combined_map.texts):
            for j, text in enumerate(row):
                text.set_text("✓" if seq_allowed[i, j] else "")
                text.set_color("white")
        where = "keys (columns)" if masked == "keys" else "queries (rows)"
        combined_ax.set_title(f"combined: causal & padded {masked}")

        seq_weights = weights[shown]  # (T, T)
        no_key = ~seq_allowed.any(dim=-1)  # (T,)
        drawn_mask = seq_allowed | no_key[:, None] if fully_masked == "uniform" else seq_allowed
        weight_map.update(seq_weights, mask=drawn_mask)
        if fully_masked == "zeros":
            for i in torch.nonzero(no_key).flatten().tolist():
                for text in weight_map.texts[i]:
                    text.set_text("0")
                    text.set_color("black")
        n_empty = int(no_key.sum())
        outcome = {"nan": "NaN", "zeros": "0", "uniform": f"1/{T} each"}[fully_masked]
        weight_ax.set_title(f"weights: {n_empty} row{'s' if n_empty != 1 else ''} without a key "
                            f"→ {outcome}" if n_empty else "weights: every row has a key")

        on_padding = torch.nan_to_num(weights) * ~is_token[:, None, :]  # (B, T, T)
        real_reads_pad = bool(on_padding[is_token].sum() > 0)  # rows of real queries
        n_nan = int(torch.isnan(weights).any(dim=-1).sum())
        parts = [f"{side} padding, mask on {where}:"]
        parts.append("real tokens give weight to padding" if real_reads_pad
                     else "no real token gives weight to padding")
        parts.append(f"{n_nan} NaN row{'s' if n_nan != 1 else ''} in the batch" if n_nan
                     else "no NaN in the batch")
        caption.set_text(" · ".join([parts[0] + " " + parts[1], parts[2]]))

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
        if problem:  # say so in the widget and in the picture, with no panel to misread
            for heatmap in heatmaps:
                heatmap.ax.set_visible(False)
            heading.set_text(f"H = {num_heads}, d_out = {d_out}: no multi-head split   "
                             f"(weights seed {seed + new_weights}, shown once d_out fits)")
            return problem
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
