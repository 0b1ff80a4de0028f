"""Notebook 09: step through generation with a KV cache, one new token at a time.

Top: the cache, one row per layer for the keys and one for the values, one column per
token: the columns cached before this step, those added at this step, and the positions
not in the cache. Bottom: the newest token's attention weights in every head of one
layer, over the prompt and the text generated so far.
"""

import functools
from dataclasses import dataclass, replace

import ipywidgets as widgets
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from helpers.gpt.data import LETTERS, encode
from helpers.gpt.generation import generation_trace
from helpers.gpt.model import TinyGPT
from helpers.plotting import (
    FIGURE_WIDTH,
    TEXT_SIZE,
    TITLE_SIZE,
    CellLabels,
    Heatmap,
    cell_layer,
    new_figure,
    set_cells,
)
from helpers.seeding import seeded
from helpers.widgets.explorer import CONTROL_STYLE, FigureExplorer

# Prompts offered in the explorer: segments that repeat, of several lengths.
EXAMPLE_PROMPTS = ("abcdeabcd", "fbadlfb", "hopho", "gfonmlakjgf")
NEW_TOKENS = 16
CACHE_COLOURS = ("#f2f2f2", "#9ecae1", "#08519c")  # not cached, cached, added now
CACHE_STATES = ("not in the cache", "cached before this step", "added at this step")
PROMPT_LINE_COLOUR = "#e4007c"


def untrained_model(seed: int = 0, context_length: int = 64) -> TinyGPT:
    """A freshly built TinyGPT of notebook 08's sizes (16 letters), seeded, for trying the
    controls without a trained model; the global random state is left as it was."""
    with seeded(seed):
        return TinyGPT(16, context_length).eval()


@dataclass(frozen=True)
class GenerationView:
    """What the generation explorer shows at one step of one prompt."""

    tokens: tuple  # (T_max,) the letter at each position so far, "" if not written yet
    cache: np.ndarray  # (2L, T_max) 0 not in the cache, 1 cached before, 2 added now
    weights: np.ndarray  # (H, T_max) the newest token's weights over the keys, 0 beyond
    keys: np.ndarray  # (T_max,) True at the keys that exist at this step
    prompt_length: int
    heading: str
    caption: str


def generation_view(prompt: str, step: int, layer: int, *, trace_of,
                    new_tokens: int) -> GenerationView:
    """Step ``step`` (1 .. new_tokens) of greedy generation with the cache from
    ``prompt``: step 1 reads the whole prompt (the prefill), every later step one token.
    ``trace_of(prompt)`` returns the prompt's ``generation_trace``; it is called once the
    step is known to be in range (the explorer's runs generation the first time a prompt
    is asked for, and keeps the trace)."""
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
    cache = np.zeros((2 * L, T_max))
    cache[:, :added_from] = 1
    cache[:, added_from:T_k] = 2
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
        tokens=tokens, cache=cache, weights=row, keys=keys,
        prompt_length=P,
        heading=f"{reading} (position {T_k - 1}):\nit attends over {T_k} keys and writes "
                f"{wrote!r}",
        caption=f"cache: {T_k} tokens, {L} {L_text}, {cache_bytes:,} bytes; below: layer "
                f"{layer}")


class GenerationDrawing:
    """The cache grid, under a row of the letters written so far, above the newest
    token's attention row per head; a line marks where the prompt ends. Letters are
    drawn in the cells, not as tick labels, so that a step changes only the Axes'
    contents and the picture is redrawn by blitting (``helpers.rendering``)."""

    def __init__(self, num_layers: int, num_heads: int, T_max: int):
        self.T_max = T_max
        rows = 2 * num_layers + 1  # the letters, then keys and values of every layer
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 2.6 + 0.34 * (rows + num_heads)),
                                 layout="constrained")
        self.cache_ax, self.weights_ax = self.figure.subplots(
            2, 1, height_ratios=[rows, num_heads])
        self.cache_cells = cell_layer(self.cache_ax, np.zeros((rows, T_max)),
                                      cmap=ListedColormap([*CACHE_COLOURS, "white"]),
                                      vmin=-0.5, vmax=3.5)
        self.letters = CellLabels(self.cache_ax, rows, T_max, fontsize=11)
        self.cache_ax.set(xlim=(-0.5, T_max - 0.5), ylim=(rows - 0.5, -0.5))
        self.cache_ax.set_yticks(range(rows), labels=["letter"] + [
            f"layer {i} {kind}" for i in range(num_layers) for kind in ("keys", "values")])
        self.cache_ax.set_xticks(range(T_max), labels=[""] * T_max)
        # Outside the Axes, so that it is drawn once, not with every step's contents.
        self.figure.legend(handles=[Patch(facecolor=c, edgecolor="grey", label=s)
                                    for c, s in zip(CACHE_COLOURS, CACHE_STATES, strict=True)],
                           loc="outside lower center", ncol=3, fontsize=TEXT_SIZE, frameon=False)
        self.heatmap = Heatmap(self.weights_ax, np.zeros((num_heads, T_max)),
                               row_labels=[f"head {h}" for h in range(num_heads)],
                               col_labels=range(T_max), annotate=False)
        self.weights_ax.set_aspect("auto")
        self.weights_ax.set_xlabel("key position (grey: not a key yet)", fontsize=TEXT_SIZE)
        self.weights_ax.set_ylabel("the newest token's\nattention weights", fontsize=TEXT_SIZE)
        self.colorbar = self.figure.colorbar(self.heatmap.image,
                                             ax=[self.cache_ax, self.weights_ax],
                                             shrink=0.8)
        self.colorbar.set_label("attention weight", fontsize=TEXT_SIZE)
        self.colorbar.ax.tick_params(labelsize=TEXT_SIZE)
        for ax in (self.cache_ax, self.weights_ax):
            ax.tick_params(labelsize=TEXT_SIZE)
        self.prompt_lines = [ax.axvline(0, color=PROMPT_LINE_COLOUR, lw=2)
                             for ax in (self.cache_ax, self.weights_ax)]
        self.heading = self.figure.suptitle("\n\n", fontsize=TITLE_SIZE)  # three lines
        self.figure.get_layout_engine().execute(self.figure)
        self.figure.set_layout_engine("none")

    def draw(self, view: GenerationView):
        T_max = len(view.tokens)
        if T_max != self.T_max:
            raise ValueError(f"this drawing shows {self.T_max} positions, the view has "
                             f"{T_max}")
        grid = np.vstack([np.full((1, T_max), 3), view.cache])  # the letters' row: white
        set_cells(self.cache_cells, grid)
        texts = np.full(grid.shape, "", dtype=object)
        texts[0] = view.tokens
        self.letters.set(texts, np.full(grid.shape, "black", dtype=object))
        self.heatmap.update(view.weights, mask=view.keys[None, :])
        for line in self.prompt_lines:
            line.set_xdata([view.prompt_length - 0.5] * 2)
        self.heading.set_text(f"{view.heading}\n{view.caption}")


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
        return generation_trace(model, prompt_ids[prompt], new_tokens)

    num_layers, num_heads = len(model.blocks), model.blocks[0].attention.num_heads
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

    return FigureExplorer(controls, compute, GenerationDrawing(num_layers, num_heads, T_max))


def pad_view(view: GenerationView, extra: int) -> GenerationView:
    """The same view with ``extra`` more positions at the end, none written (so that every
    prompt fits one picture)."""
    if extra == 0:
        return view
    return replace(view, tokens=view.tokens + ("",) * extra,
                   cache=np.pad(view.cache, ((0, 0), (0, extra))),
                   weights=np.pad(view.weights, ((0, 0), (0, extra))),
                   keys=np.pad(view.keys, (0, extra)))
