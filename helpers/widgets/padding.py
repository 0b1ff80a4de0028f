"""Notebook 6: padding side, lengths, and rows with no key."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Patch, Rectangle

from helpers.attention import (
    CausalAttention,
    attention_scores,
    causal_mask,
    padded_causal_weights,
    padding_mask,
)
from helpers.data import TOKENS, example_inputs
from helpers.plotting import CMAP, MASKED_COLOUR, NAN_COLOUR, Heatmap, weight_texts
from helpers.widgets.explorer import (
    CONTROL_STYLE,
    FigureExplorer,
)

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


@dataclass(frozen=True)
class PaddingView:
    """What the padding explorer shows: the padded batch, and for the sequence shown its
    combined mask and its weights."""

    words: np.ndarray  # (B, T) each position's token, "pad" for padding
    is_token: np.ndarray  # (B, T) bool: True at real tokens (the padding mask)
    shown: int  # the sequence of the two right-hand panels, outlined in the batch
    token_labels: tuple  # (T,) "position:token" of the sequence shown
    allowed: np.ndarray  # (T, T) bool: its combined mask, True where a query may attend
    weights: np.ndarray  # (T, T) its weights, NaN in rows with no key in "nan" mode
    weight_mask: np.ndarray  # (T, T) bool: the cells drawn as weights (others greyed)
    weight_text: np.ndarray  # (T, T) what each weight cell says: "0.25", "NaN", "0" or ""
    combined_title: str
    weights_title: str
    caption: str  # what the whole batch does


def padding_module(seed: int) -> CausalAttention:
    """The ``CausalAttention(3, 2)`` whose query and key projections the explorer uses,
    built after ``torch.manual_seed(seed)`` in a forked random state (the learner's is
    left alone)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return CausalAttention(d_in=3, d_out=2, context_length=len(TOKENS))


def padding_view(length_0: int, length_1: int, length_2: int, side: str, masked: str,
                 fully_masked: str, shown: int, *, seed: int = 123) -> PaddingView:
    """What ``padding_explorer`` shows for one choice of its controls: the three sequences
    padded to T = 6 on ``side`` (``padded_example_ids``), their scores through the module
    built with ``seed``, and the weights with padding hidden on the ``masked`` side and
    rows with no key made ``fully_masked`` (``helpers.attention.padded_causal_weights``)."""
    T = len(TOKENS)
    module = padding_module(seed)
    ids = padded_example_ids([length_0, length_1, length_2], T, side=side)  # (B, T)
    is_token = ids != PAD_ID  # (B, T)
    x = padded_example_embeddings(ids)  # (B, T, d_in)
    with torch.no_grad():
        scores = attention_scores(module.W_query(x), module.W_key(x))  # (B, T, T)
    allowed, weights = padded_causal_weights(scores, is_token, masked=masked,
                                             fully_masked=fully_masked)
    words = np.array([[TOKENS[i - 1] if i != PAD_ID else "pad" for i in row]
                      for row in ids.tolist()], dtype=object)

    seq_allowed = allowed[shown].numpy()  # (T, T)
    seq_weights = weights[shown].numpy()  # (T, T)
    no_key = ~seq_allowed.any(axis=-1)  # (T,)
    # A uniform row is drawn as weights; a NaN or zero row as masked cells, saying so.
    weight_mask = seq_allowed | no_key[:, None] if fully_masked == "uniform" else seq_allowed
    weight_text = weight_texts(seq_weights, weight_mask)
    if fully_masked == "zeros":  # rows without a key are zeros: say so in every cell
        weight_text[no_key] = "0"
    n_empty = int(no_key.sum())
    outcome = {"nan": "NaN", "zeros": "0", "uniform": f"1/{T} each"}[fully_masked]

    on_padding = torch.nan_to_num(weights) * ~is_token[:, None, :]  # (B, T, T)
    real_reads_pad = bool(on_padding[is_token].sum() > 0)  # rows of real queries
    n_nan = int(torch.isnan(weights).any(dim=-1).sum())
    where = "keys (columns)" if masked == "keys" else "queries (rows)"
    reads = ("real tokens give weight to padding" if real_reads_pad
             else "no real token gives weight to padding")
    nans = f"{n_nan} NaN row{'s' if n_nan != 1 else ''} in the batch" if n_nan \
        else "no NaN in the batch"
    return PaddingView(
        words=words, is_token=is_token.numpy(), shown=shown,
        token_labels=tuple(f"{j}:{word}" for j, word in enumerate(words[shown])),
        allowed=seq_allowed, weights=seq_weights, weight_mask=weight_mask,
        weight_text=weight_text, combined_title=f"combined: causal & padded {masked}",
        weights_title=(f"weights: {n_empty} row{'s' if n_empty != 1 else ''} without a key "
                       f"→ {outcome}" if n_empty else "weights: every row has a key"),
        caption=f"{side} padding, mask on {where}: {reads} · {nans}")


class PaddingDrawing:
    """Left to right: the causal mask (fixed); the batch with its padding mask (padding
    greyed, the sequence shown outlined); that sequence's combined mask; its weights, NaN
    cells in orange. A caption above reports the whole batch."""

    def __init__(self):
        T = len(TOKENS)
        B = len(PADDING_SEQUENCE_STARTS)
        # The batch panel gets more width, and its cells the full panel height, so that its
        # token words can be read at notebook width.
        self.figure, axes = plt.subplots(1, 4, figsize=(15.5, 4.9), layout="constrained",
                                         gridspec_kw={"width_ratios": [1, 1.4, 1, 1]})
        plt.close(self.figure)
        causal_ax, batch_ax, combined_ax, weight_ax = axes
        causal = causal_mask(T).numpy()
        # Masks are drawn in one mid colour of the scale (value 1 on a 0..2 scale), so that
        # an allowed cell does not look like a weight of 1.
        mask_range = (0.0, 2.0)
        causal_map = Heatmap(causal_ax, causal.astype(float), mask=causal,
                             value_range=mask_range, title="causal mask (T, T)")
        causal_map.update(causal.astype(float), mask=causal, cell_text=np.where(causal, "✓", ""))
        self.batch_map = Heatmap(batch_ax, np.ones((B, T)), annotate=True,
                                 value_range=mask_range,
                                 row_labels=[f"seq {b}" for b in range(B)],
                                 col_labels=range(T), title="padding mask (B, T): the batch")
        batch_ax.set_aspect("auto")
        batch_ax.set_xlabel("position")
        batch_ax.set_ylabel("sequence")
        self.batch_map.cell_labels.fontsize = 10
        self.shown_outline = batch_ax.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False,
                                                          edgecolor="red", linewidth=2.5))
        self.combined_map = Heatmap(combined_ax, np.ones((T, T)), value_range=mask_range)
        self.weight_map = Heatmap(weight_ax, np.zeros((T, T)))
        self.figure.colorbar(self.weight_map.image, ax=weight_ax, shrink=0.6,
                             label="attention weight")
        self.figure.legend(handles=[
            Patch(facecolor=plt.get_cmap(CMAP)(0.5), edgecolor="grey",
                  label="✓ may attend / real token"),
            Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked / padding"),
            Patch(facecolor=NAN_COLOUR, edgecolor="grey", label="NaN"),
            Patch(facecolor="none", edgecolor="red", linewidth=2, label="the sequence shown"),
        ], loc="outside lower center", ncols=4, fontsize=9)
        self.caption = self.figure.suptitle(" ", fontsize=14)
        # Laid out once, with the widest token labels and titles the controls can bring:
        # every later one fits, and the panels never move (the explorer keeps this layout).
        widest = [f"{j}:{max(TOKENS, key=len)}" for j in range(T)]
        for heatmap in (self.combined_map, self.weight_map):
            heatmap.set_token_labels(widest, widest)
        combined_ax.set_title("combined: causal & padded queries")
        weight_ax.set_title(f"weights: {T} rows without a key → 1/{T} each")
        layout = self.figure.get_layout_engine()
        layout.set(w_pad=8 / 72)  # a little air between a panel and the next one's labels
        layout.execute(self.figure)
        self.figure.set_layout_engine("none")

    def draw(self, view: PaddingView):
        self.batch_map.update(np.ones(view.words.shape), mask=view.is_token,
                              cell_text=view.words)
        self.shown_outline.set_y(view.shown - 0.5)
        for heatmap in (self.combined_map, self.weight_map):
            heatmap.set_token_labels(view.token_labels, view.token_labels)
        self.combined_map.update(view.allowed.astype(float), mask=view.allowed,
                                 cell_text=np.where(view.allowed, "✓", ""))
        self.combined_map.ax.set_title(view.combined_title)
        self.weight_map.update(view.weights, mask=view.weight_mask, cell_text=view.weight_text)
        self.weight_map.ax.set_title(view.weights_title)
        self.caption.set_text(view.caption)


def padding_explorer(seed: int = 123) -> FigureExplorer:
    """Notebook 06: causal mask, padding mask, their combination and the weights.

    Three sequences of the running example's tokens, padded to T = 6 on the chosen side
    (pad id 0, embedded as zeros), go through the query and key projections of a
    ``CausalAttention(3, 2)`` built with seed ``seed``. Controls: each sequence's length,
    the padding side, whether the padding mask hides padded keys (columns) or padded
    queries (rows), what a row with no allowed key becomes, and which sequence the two
    right-hand panels show. Panels: the causal mask; the batch, padding greyed; the
    combined mask of the shown sequence; its weights, NaN cells in orange.
    """
    T = len(TOKENS)
    B = len(PADDING_SEQUENCE_STARTS)
    # The sliders follow the drag: a change redraws in about 30 ms, or about 110 ms when it
    # relabels the shown sequence's tokens (new tick labels: the whole figure is drawn).
    slider = {"min": 0, "max": T, "continuous_update": True, "style": CONTROL_STYLE,
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
    return FigureExplorer(controls, partial(padding_view, seed=seed), PaddingDrawing())
