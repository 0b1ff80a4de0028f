"""Notebook 08: what the heads of a trained tiny GPT attend to, on a sequence you choose."""

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
import torch

from helpers.attention import causal_mask
from helpers.gpt.data import LETTERS, RepeatTask, encode
from helpers.gpt.model import TinyGPT
from helpers.gpt.training import (
    induction_score,
    induction_targets,
    next_token_score,
    previous_token_score,
)
from helpers.plotting import FIGURE_WIDTH, TEXT_SIZE, TITLE_SIZE, Heatmap, new_figure
from helpers.seeding import seeded
from helpers.widgets.explorer import CONTROL_STYLE, FigureExplorer, closes_the_one_before

# Sequences offered to pick (any other can be typed): repeats of several lengths, one
# longer than the training data's longest segment, and one that never repeats.
EXAMPLE_SEQUENCES = (
    "abcdef abcdef abcdef",
    "fbadl fbadl fbadl fbadl",
    "pick pick pick pick pick",
    "ghfonmlakj ghfonmlakj",
    "abcdefghijklmnop",
)
INDUCTION_COLOUR = "#e4007c"


def untrained_models(task: RepeatTask = None, seed: int = 0) -> dict:
    """Two freshly built TinyGPTs for ``task`` (default: ``RepeatTask()``, notebook 08's
    sizes), same seed and so same weights, with and without the causal mask: what the
    explorer shows when it is given no trained models. The global random state is left
    as it was."""
    task = RepeatTask() if task is None else task
    models = {}
    for name, causal in (("untrained, masked", True), ("untrained, unmasked", False)):
        with seeded(seed):
            models[name] = TinyGPT(task.vocab_size, task.context_length, causal=causal).eval()
    return models


@dataclass(frozen=True)
class HeadsView:
    """What the heads explorer shows: every head of one layer on one sequence."""

    weights: np.ndarray  # (H, T, T) the layer's attention weights
    tokens: tuple  # (T,) the letters of the sequence
    allowed: np.ndarray  # (T, T) True where a query may attend (all True without a mask)
    induction_cells: np.ndarray  # (T, T) True where an induction head would look
    titles: tuple  # (H,) each head's scores
    heading: str


def check_sequence(sequence: str, model) -> torch.Tensor:
    """The sequence's token ids (T,), or a ValueError that says what to type instead."""
    ids = encode(sequence)
    last = LETTERS[model.vocab_size - 1]
    if ids.max() >= model.vocab_size:
        bad = sorted({LETTERS[i] for i in ids.tolist() if i >= model.vocab_size})
        raise ValueError(f"this model knows only the letters a to {last}; the sequence "
                         f"{sequence!r} has {''.join(bad)!r}")
    if len(ids) > model.context_length:
        raise ValueError(f"the sequence has {len(ids)} letters; this model reads at most "
                         f"context_length={model.context_length}: shorten it")
    return ids


def score_text(value: float) -> str:
    return "–" if np.isnan(value) else f"{value:.2f}"


def heads_view(sequence: str, layer: int, model: str, *, models: dict) -> HeadsView:
    """The attention weights of every head of ``layer`` of ``models[model]`` on
    ``sequence`` (letters; spaces are ignored), with each head's previous-token,
    next-token and induction scores on it (``helpers.gpt.training``; "–" for induction
    when no letter repeats, so that no induction is possible)."""
    chosen = models[model]
    ids = check_sequence(sequence, chosen)
    if not 0 <= layer < len(chosen.blocks):
        raise ValueError(f"layer must be from 0 to {len(chosen.blocks) - 1}, got {layer}")
    with torch.no_grad():
        _, weights = chosen(ids[None], return_weights=True)  # (1, L, H, T, T)
    weights = weights[0, layer]  # (H, T, T)
    scores = {"previous": previous_token_score(weights), "next": next_token_score(weights),
              "induction": induction_score(weights, ids)}  # (H,) each
    T = len(ids)
    allowed = causal_mask(T) if chosen.causal else torch.ones(T, T, dtype=torch.bool)
    titles = tuple(f"head {h}: " + ",\n".join(
        ", ".join(f"{kind} {score_text(scores[kind][h].item())}" for kind in kinds)
        for kinds in (("previous",), ("next", "induction"))) for h in range(len(weights)))
    mask_text = "causal mask" if chosen.causal else "no mask: the future is visible"
    return HeadsView(
        weights=weights.numpy(), tokens=tuple(LETTERS[i] for i in ids.tolist()),
        allowed=allowed.numpy(), induction_cells=induction_targets(ids).numpy(),
        titles=titles,
        heading=f"{model} model ({mask_text}), layer {layer}, T = {T} letters; "
                f"\noutlined: where an induction head looks")


class HeadsDrawing:
    """One heatmap per head, two side by side in each row, one colour bar; outlined cells
    are those an induction head attends to. A sequence of another length shows the
    heatmaps of that length (built the first time, then kept); otherwise they change in
    place."""

    def __init__(self, num_heads: int, context_length: int):
        columns = min(num_heads, 2)
        rows = -(-num_heads // columns)
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 4.6 * rows + 0.4), layout="constrained")
        axes = self.figure.subplots(rows, columns, squeeze=False)
        for ax in axes.ravel()[num_heads:]:
            ax.set_visible(False)  # a last row not full: its empty place
        self.axes = list(axes.ravel()[:num_heads])
        self.T = None
        self.heatmaps, self.outlines = [], []  # the panels shown, one per head
        self.panels = {}  # sequence length -> (heatmaps, outlines) built for it
        self.build(["m"] * context_length)  # a wide letter, for the layout
        colorbar = self.figure.colorbar(self.heatmaps[0].image, ax=self.axes, shrink=0.8)
        colorbar.set_label("attention weight", fontsize=TEXT_SIZE)
        colorbar.ax.tick_params(labelsize=TEXT_SIZE)
        self.heading = self.figure.suptitle(" \n ", fontsize=TITLE_SIZE)
        # Laid out once at the longest sequence, and kept.
        self.figure.get_layout_engine().execute(self.figure)
        self.figure.set_layout_engine("none")
        # The first picture builds the panels again, their outlines sized by the layout.
        self.take_off_panels()
        self.T, self.heatmaps, self.outlines, self.panels = None, [], [], {}

    def build(self, tokens):
        """Show heatmaps (and outlines) for a sequence of len(tokens) letters, named by
        them: those built for that length before, or new ones. Building panels costs more
        than drawing them, so the panels of each length are kept, off the Axes, for when
        a sequence of that length comes back."""
        T = self.T = len(tokens)
        self.take_off_panels()
        if T in self.panels:
            self.heatmaps, self.outlines = self.panels[T]
            for heatmap, outlines in zip(self.heatmaps, self.outlines, strict=True):
                for artist in heatmap.artists():
                    heatmap.ax.add_collection(artist, autolim=False)
                heatmap.ax.add_line(outlines)
                heatmap.take_axes()
            return
        self.heatmaps, self.outlines = [], []
        for ax in self.axes:
            first_column = ax.get_subplotspec().is_first_col()  # names the rows
            self.heatmaps.append(Heatmap(ax, np.zeros((T, T)),
                                         row_labels=tokens if first_column else [""] * T,
                                         col_labels=tokens))
            (outlines,) = ax.plot([], [], linestyle="none", marker="s",
                                 markersize=self.cell_points(ax, T), markerfacecolor="none",
                                 markeredgewidth=1.5, markeredgecolor=INDUCTION_COLOUR,
                                 zorder=4)
            self.outlines.append(outlines)
            if not first_column:
                ax.set_ylabel("")
        self.panels[T] = (self.heatmaps, self.outlines)

    def take_off_panels(self):
        """Take the panels shown off their Axes (they stay in ``panels``)."""
        for heatmap, outlines in zip(self.heatmaps, self.outlines, strict=True):
            for artist in (*heatmap.artists(), outlines):
                artist.remove()

    @property
    def animated(self) -> list:
        """What draw changes in the panels shown (cells, outlines, titles), each panel's
        frame, drawn over its cells, and the heading."""
        return [*(artist for heatmap, outlines in zip(self.heatmaps, self.outlines, strict=True)
                  for artist in (*heatmap.artists(), outlines, heatmap.ax.title,
                                 *heatmap.ax.spines.values())),
                self.heading]

    def cell_points(self, ax, T: int) -> float:
        """The side of a cell in points, a little less: an outline inside the cell."""
        width_inches = ax.get_position().width * self.figure.get_figwidth()
        return 0.8 * 72 * width_inches / T

    def draw(self, view: HeadsView):
        T = len(view.tokens)
        if T != self.T:
            self.build(view.tokens)
        rows, columns = np.nonzero(view.induction_cells)
        for h, (heatmap, outlines) in enumerate(zip(self.heatmaps, self.outlines, strict=True)):
            first_column = heatmap.ax.get_subplotspec().is_first_col()
            heatmap.set_token_labels(view.tokens if first_column else [""] * T, view.tokens)
            heatmap.update(view.weights[h], mask=view.allowed)
            outlines.set_data(columns, rows)
            heatmap.ax.set_title(view.titles[h], fontsize=TEXT_SIZE)
        self.heading.set_text(view.heading)
        return view.tokens  # the panels of this length, their tick labels


@closes_the_one_before
def heads_explorer(models: dict = None, *, sequence: str = EXAMPLE_SEQUENCES[0],
                   sequences=EXAMPLE_SEQUENCES) -> FigureExplorer:
    """Notebook 08: the attention weights of every head of a layer of a trained TinyGPT.

    ``models`` maps a name to a TinyGPT (e.g. {"masked": ..., "unmasked": ...}), all with
    the same number of layers and heads; without it, two untrained models
    (``untrained_models``) let the controls be tried. Controls: the sequence (pick one of
    ``sequences`` or type letters; spaces are ignored), the layer and the model. Each
    head's title gives its previous-token, next-token and induction scores on the
    sequence; outlined cells are those an induction head attends to. A sequence the model
    cannot read is answered with a message in the widget, and the last picture stays.
    """
    models = untrained_models() if models is None else dict(models)
    if not models or not all(isinstance(model, TinyGPT) for model in models.values()):
        raise TypeError("models must map names to TinyGPT models, e.g. "
                        "{'masked': masked_model, 'unmasked': unmasked_model}")
    first = next(iter(models.values()))
    shapes = {(len(model.blocks), model.blocks[0].attention.num_heads)
              for model in models.values()}
    if len(shapes) > 1:
        raise ValueError(f"the models must have the same layers and heads to be shown in "
                         f"one explorer, got (layers, heads) = {sorted(shapes)}")
    num_layers, num_heads = shapes.pop()
    controls = {
        "sequence": widgets.Combobox(
            value=sequence, options=list(sequences), ensure_option=False,
            continuous_update=False, description="sequence (pick or type)",
            style=CONTROL_STYLE, layout=widgets.Layout(width="auto", min_width="380px")),
        "layer": widgets.Dropdown(
            options=[(f"layer {i}", i) for i in range(num_layers)], value=num_layers - 1,
            description="layer", style=CONTROL_STYLE),
        "model": widgets.Dropdown(options=list(models), value=next(iter(models)),
                                  description="model", style=CONTROL_STYLE),
    }

    def compute(sequence: str, layer: int, model: str) -> HeadsView:
        return heads_view(sequence, layer, model, models=models)

    return FigureExplorer(controls, compute, HeadsDrawing(num_heads, first.context_length))
