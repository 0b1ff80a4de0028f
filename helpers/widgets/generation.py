"""Notebook 09: step through generation with a KV cache, one new token at a time.

Top: the letters so far, then what the cache holds: for every layer, its cached keys and
values, a few features of each (head 0's first ``CACHE_FEATURES``) in one column per
token, coloured by value; the columns added at this step are outlined, and the positions
not in the cache yet are grey. Bottom: the newest token's attention weights in every head
of one layer, over the prompt and the text generated so far.
"""

import functools
from dataclasses import dataclass, replace

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, to_rgba
from matplotlib.patches import Patch, Rectangle

from helpers.gpt.data import LETTERS, encode
from helpers.gpt.generation import KVCache, forward_with_cache, generation_trace
from helpers.gpt.model import TinyGPT
from helpers.plotting import (
    FIGURE_WIDTH,
    SCORES_CMAP,
    TEXT_SIZE,
    TITLE_SIZE,
    CellLabels,
    Heatmap,
    new_figure,
)
from helpers.seeding import seeded
from helpers.widgets.explorer import CONTROL_STYLE, FigureExplorer, closes_the_one_before

# Prompts offered in the explorer: segments that repeat, of several lengths.
EXAMPLE_PROMPTS = ("abcdeabcd", "fbadlfb", "hopho", "gfonmlakjgf")
NEW_TOKENS = 16
CACHE_FEATURES = 4  # features of head 0 shown per cached key and value
NOT_CACHED_COLOUR = "#e6e6e6"
ADDED_EDGE_COLOUR = "black"
PROMPT_LINE_COLOUR = "#e4007c"
# The cache rows in data units (a token's column is 1 wide): the letters' row is 1 high,
# a feature's row FEATURE_HEIGHT, with GAP between the blocks of keys and values.
FEATURE_HEIGHT, GAP = 0.4, 0.3


def untrained_model(seed: int = 0, context_length: int = 64) -> TinyGPT:
    """A freshly built TinyGPT of notebook 08's sizes (16 letters), seeded, for trying the
    controls without a trained model; the global random state is left as it was."""
    with seeded(seed):
        return TinyGPT(16, context_length).eval()


@torch.no_grad()
def replayed_cache(model: TinyGPT, ids, prompt_length: int) -> KVCache:
    """The KV cache that greedy generation from ``ids[:prompt_length]`` builds, given
    what it wrote, ``ids`` (T,): the prompt read at once (the prefill), then one token at
    a time, by the same calls as in generation, so the same numbers. The last token of
    ``ids`` is only written, never read: the cache holds T - 1 tokens."""
    cache = KVCache()
    forward_with_cache(model, ids[None, :prompt_length], cache)
    for position in range(prompt_length, len(ids) - 1):
        forward_with_cache(model, ids[None, position:position + 1], cache)
    return cache


def cache_features(cache: KVCache, features: int = CACHE_FEATURES) -> np.ndarray:
    """(2L, features, T): the first ``features`` features of head 0 of every cached key
    and value, layer by layer (layer 0's keys, layer 0's values, layer 1's keys, ...)."""
    rows = [kind[layer][0, 0, :, :features].T for layer in range(len(cache.keys))
            for kind in (cache.keys, cache.values)]  # (features, T) each
    return torch.stack(rows).numpy()


def colour_scale(values: np.ndarray) -> float:
    """A symmetric colour scale ±scale that holds every value: the largest |value|,
    rounded up to a half."""
    return max(0.5, float(np.ceil(2 * np.nanmax(np.abs(values))) / 2))


def explorer_trace(model: TinyGPT, ids, new_tokens: int) -> dict:
    """What the explorer steps through for one prompt ids (T,): ``generation_trace``, and
    "cache": ``cache_features`` of the cache that generation leaves, (2L, F, T +
    new_tokens - 1)."""
    trace = generation_trace(model, ids, new_tokens)
    return {**trace, "cache": cache_features(replayed_cache(model, trace["ids"], len(ids)))}


@dataclass(frozen=True)
class GenerationView:
    """What the generation explorer shows at one step of one prompt."""

    tokens: tuple  # (T_max,) the letter at each position so far, "" if not written yet
    cache: np.ndarray  # (2L, F, T_max) features of the cached keys and values, NaN beyond
    added: tuple  # (first, stop): the columns the cache gained at this step
    scale: float  # the colour scale of the cache: -scale to +scale
    weights: np.ndarray  # (H, T_max) the newest token's weights over the keys, 0 beyond
    keys: np.ndarray  # (T_max,) True at the keys that exist at this step
    prompt_length: int
    heading: str
    caption: str


def generation_view(prompt: str, step: int, layer: int, *, trace_of,
                    new_tokens: int) -> GenerationView:
    """Step ``step`` (1 .. new_tokens) of greedy generation with the cache from
    ``prompt``: step 1 reads the whole prompt (the prefill), every later step one token.
    ``trace_of(prompt)`` returns the prompt's ``explorer_trace``; it is called once the
    step is known to be in range (the explorer runs generation the first time a prompt is
    asked for, and keeps the trace)."""
    if not 1 <= step <= new_tokens:
        raise ValueError(f"step must be from 1 to {new_tokens}, got {step}")
    trace = trace_of(prompt)
    weights = trace["weights"][step - 1]  # (L, H, T_k)
    L, H, T_k = weights.shape
    if not 0 <= layer < L:
        raise ValueError(f"layer must be from 0 to {L - 1}, got {layer}")
    P = len(trace["ids"]) - new_tokens  # the prompt's length
    T_max = P + new_tokens
    letters = [LETTERS[i] for i in trace["ids"].tolist()]
    written = T_k + 1  # the keys, and the token written at this step
    tokens = tuple(letters[:written]) + ("",) * (T_max - written)
    added_from = 0 if step == 1 else T_k - 1
    everything = trace["cache"]  # (2L, F, T_max - 1): the cache after the last step
    cache = np.full(everything.shape[:2] + (T_max,), np.nan)
    cache[..., :T_k] = everything[..., :T_k]  # a token's key and value never change
    row = np.zeros((H, T_max))
    row[:, :T_k] = weights[layer].numpy()
    keys = np.arange(T_max) < T_k
    newest, wrote = letters[T_k - 1], letters[T_k]
    if step == 1:
        reading = f"step 1 (prefill): the model reads the whole prompt; its last token {newest!r}"
    else:
        reading = f"step {step}: the model reads one token, {newest!r}"
    cache_bytes = trace["cache_bytes"][step - 1]
    L_text = "layer" if L == 1 else "layers"
    return GenerationView(
        tokens=tokens, cache=cache, added=(added_from, T_k),
        scale=colour_scale(everything), weights=row, keys=keys,
        prompt_length=P,
        heading=f"{reading} (position {T_k - 1}):\nit attends over {T_k} keys and writes "
                f"{wrote!r}",
        caption=f"cache: {T_k} tokens, {T_k - added_from} of them new (outlined), {L} "
                f"{L_text}, {cache_bytes:,} bytes; below: layer {layer}")


class GenerationDrawing:
    """The letters and the cache's contents, one column per position, above the newest
    token's attention row per head; a line marks where the prompt ends. Letters are
    drawn in the cells, not as tick labels, so that a step changes only the Axes'
    contents and the picture is redrawn by blitting (``helpers.rendering``)."""

    def __init__(self, num_layers: int, num_heads: int, head_dim: int, T_max: int,
                 features: int = CACHE_FEATURES):
        self.T_max, self.features = T_max, features
        self.blocks = 2 * num_layers  # keys and values of every layer
        # Rows from the top: the letters, then per block (a layer's keys or values) a gap
        # and its features; row i spans row_edges[i] to row_edges[i + 1], downwards.
        heights, blocks = [1.0], []
        for _ in range(self.blocks):
            heights.append(GAP)
            blocks.append(range(len(heights), len(heights) + features))
            heights += [FEATURE_HEIGHT] * features
        self.row_edges = np.concatenate([[0.0], np.cumsum(heights)]) - 0.5
        self.feature_rows = np.concatenate(blocks)  # the rows that show a feature
        cache_height = self.row_edges[-1] + 0.5
        self.figure = new_figure(
            figsize=(FIGURE_WIDTH, 3.0 + 0.26 * (cache_height + 1.4 * num_heads)),
            layout="constrained")
        self.cache_ax, self.weights_ax = self.figure.subplots(
            2, 1, height_ratios=[cache_height, 1.4 * num_heads])
        self.norm = Normalize(-1.0, 1.0)  # the prompt's scale, set by draw
        self.cmap = colormaps[SCORES_CMAP]
        self.cache_cells = self.cache_ax.pcolormesh(
            np.arange(T_max + 1) - 0.5, self.row_edges, np.zeros((len(heights), T_max, 4)),
            antialiased=False, edgecolors="none", linewidth=0)
        self.letters = CellLabels(self.cache_ax, 1, T_max, fontsize=TEXT_SIZE)
        top = self.row_edges[2]  # the first feature row's top edge
        self.added_box = Rectangle((-0.5, top), 1, self.row_edges[-1] - top, fill=False,
                                   edgecolor=ADDED_EDGE_COLOUR, linewidth=2, zorder=4)
        self.cache_ax.add_patch(self.added_box)
        self.cache_ax.set(xlim=(-0.5, T_max - 0.5), ylim=(self.row_edges[-1], -0.5))
        centres = [(self.row_edges[rows[0]] + self.row_edges[rows[-1] + 1]) / 2
                   for rows in blocks]
        self.cache_ax.set_yticks([0, *centres], labels=["letter"] + [
            f"layer {i} {kind}" for i in range(num_layers) for kind in ("keys", "values")])
        self.cache_ax.set_xticks(range(T_max), labels=[""] * T_max)
        self.cache_ax.set_title(f"the cache: each token's key and value (head 0, {features} "
                                f"of {head_dim} features)", fontsize=TITLE_SIZE)
        for spine in self.cache_ax.spines.values():
            spine.set_visible(False)
        self.cache_colorbar = self.figure.colorbar(
            ScalarMappable(norm=self.norm, cmap=self.cmap), ax=self.cache_ax,
            shrink=0.9, aspect=12)
        self.cache_colorbar.set_label("feature value", fontsize=TEXT_SIZE)
        # Outside the Axes, so that it is drawn once, not with every step's contents.
        self.figure.legend(handles=[
            Patch(facecolor=NOT_CACHED_COLOUR, edgecolor="grey", label="not in the cache"),
            Patch(facecolor="white", edgecolor=ADDED_EDGE_COLOUR, linewidth=2,
                  label="added to the cache at this step")],
            loc="outside lower center", ncol=2, fontsize=TEXT_SIZE, frameon=False)
        self.heatmap = Heatmap(self.weights_ax, np.zeros((num_heads, T_max)),
                               row_labels=[f"head {h}" for h in range(num_heads)],
                               col_labels=range(T_max), annotate=False)
        self.weights_ax.set_aspect("auto")
        self.weights_ax.set_xlabel("key position (grey: not a key yet)", fontsize=TEXT_SIZE)
        self.weights_ax.set_ylabel("the newest\ntoken's weights", fontsize=TEXT_SIZE)
        self.colorbar = self.figure.colorbar(self.heatmap.image, ax=self.weights_ax,
                                             shrink=0.9, aspect=6)
        self.colorbar.set_label("weight", fontsize=TEXT_SIZE)
        for bar in (self.colorbar, self.cache_colorbar):
            bar.ax.tick_params(labelsize=TEXT_SIZE)
        for ax in (self.cache_ax, self.weights_ax):
            ax.tick_params(labelsize=TEXT_SIZE)
        self.cache_ax.tick_params(axis="both", length=0)
        self.prompt_lines = [ax.axvline(0, color=PROMPT_LINE_COLOUR, lw=2)
                             for ax in (self.cache_ax, self.weights_ax)]
        self.heading = self.figure.suptitle("\n\n", fontsize=TITLE_SIZE)  # three lines
        self.figure.get_layout_engine().execute(self.figure)
        self.figure.set_layout_engine("none")
        # What draw changes, and the weights' frame, drawn over their cells (the cache's
        # has none).
        self.animated = [self.cache_cells, self.letters.collection, self.added_box,
                         *self.heatmap.artists(), *self.prompt_lines,
                         *self.weights_ax.spines.values(), self.heading]

    def cache_colours(self, view: GenerationView) -> np.ndarray:
        """(rows, T_max, 4): the cache's cells coloured by value on ±view.scale, grey
        where nothing is cached yet; the letters' row and the gaps clear."""
        colours = np.zeros((len(self.row_edges) - 1, self.T_max, 4))
        features = view.cache.reshape(-1, self.T_max)  # (2L * F, T_max)
        cached = self.cmap(self.norm(np.nan_to_num(features)))
        colours[self.feature_rows] = np.where(np.isnan(features)[..., None],
                                              to_rgba(NOT_CACHED_COLOUR), cached)
        return colours

    def draw(self, view: GenerationView):
        T_max = len(view.tokens)
        if T_max != self.T_max or view.cache.shape != (self.blocks, self.features, T_max):
            raise ValueError(f"this drawing shows {self.blocks} blocks of {self.features} "
                             f"features at {self.T_max} positions, the view has cache "
                             f"{view.cache.shape}")
        if (self.norm.vmin, self.norm.vmax) != (-view.scale, view.scale):
            self.cache_colorbar.mappable.set_clim(-view.scale, view.scale)  # a new prompt's
        self.cache_cells.set_array(self.cache_colours(view))
        self.letters.set([view.tokens], [["black"] * T_max])
        first, stop = view.added
        self.added_box.set_x(first - 0.5)
        self.added_box.set_width(stop - first)
        self.heatmap.update(view.weights, mask=view.keys[None, :])
        for line in self.prompt_lines:
            line.set_xdata([view.prompt_length - 0.5] * 2)
        self.heading.set_text(f"{view.heading}\n{view.caption}")
        return view.scale  # the cache's colour bar


@closes_the_one_before
def generation_explorer(model: TinyGPT = None, *, prompts=EXAMPLE_PROMPTS,
                        new_tokens: int = NEW_TOKENS) -> FigureExplorer:
    """Notebook 09: step through greedy generation with a KV cache.

    ``model`` is a TinyGPT (default: an untrained, seeded one, ``untrained_model``);
    ``prompts`` the prompts to pick from (letters the model knows); ``new_tokens`` how
    many tokens each prompt is continued by. Controls: the prompt, the step (1 is the
    prefill) and the layer whose heads are drawn. Generation runs once per prompt, when
    it is first picked."""
    model = untrained_model() if model is None else model
    if not isinstance(model, TinyGPT):
        raise TypeError(f"model must be a TinyGPT, got {type(model).__name__}")
    prompts = list(prompts)
    if not prompts or not all(isinstance(p, str) and p for p in prompts):
        raise TypeError(f"prompts must be a non-empty list of strings of letters, got "
                        f"{prompts!r}")
    prompt_ids = {prompt: encode(prompt) for prompt in prompts}
    for prompt, ids in prompt_ids.items():
        if ids.max() >= model.vocab_size:
            raise ValueError(f"the prompt {prompt!r} has letters this model does not know "
                             f"(it knows a to {LETTERS[model.vocab_size - 1]})")
    T_max = max(len(ids) for ids in prompt_ids.values()) + new_tokens
    if T_max > model.context_length:
        raise ValueError(f"the longest prompt and new_tokens={new_tokens} need {T_max} "
                         f"positions; the model has context_length={model.context_length}")

    @functools.cache  # generation runs once per prompt, when it is first picked
    def trace_of(prompt: str) -> dict:
        return explorer_trace(model, prompt_ids[prompt], new_tokens)

    attention = model.blocks[0].attention
    num_layers, num_heads, head_dim = len(model.blocks), attention.num_heads, attention.head_dim
    controls = {
        "prompt": widgets.Dropdown(options=prompts, value=prompts[0], description="prompt",
                                   style=CONTROL_STYLE),
        "step": widgets.IntSlider(value=1, min=1, max=new_tokens, description="step",
                                  continuous_update=False, style=CONTROL_STYLE),
        "layer": widgets.Dropdown(options=[(f"layer {i}", i) for i in range(num_layers)],
                                  value=num_layers - 1, description="layer",
                                  style=CONTROL_STYLE),
    }

    def compute(prompt: str, step: int, layer: int) -> GenerationView:
        view = generation_view(prompt, step, layer, trace_of=trace_of, new_tokens=new_tokens)
        return pad_view(view, T_max - len(view.tokens))  # shorter prompts: blank columns

    drawing = GenerationDrawing(num_layers, num_heads, head_dim, T_max)
    return FigureExplorer(controls, compute, drawing)


def pad_view(view: GenerationView, extra: int) -> GenerationView:
    """The same view with ``extra`` more positions at the end, none written (so that every
    prompt fits one picture)."""
    if extra == 0:
        return view
    return replace(view, tokens=view.tokens + ("",) * extra,
                   cache=np.pad(view.cache, ((0, 0), (0, 0), (0, extra)),
                                constant_values=np.nan),
                   weights=np.pad(view.weights, ((0, 0), (0, extra))),
                   keys=np.pad(view.keys, (0, extra)))
