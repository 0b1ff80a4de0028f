"""Notebook 7: what ``F.scaled_dot_product_attention`` computes for the mask you hand it."""

from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.patches import Patch, Rectangle

from helpers.attention import attention_weights, causal_mask
from helpers.data import (
    PAD_ID,
    REFERENCE_SEED,
    TOKENS,
    example_self_attention,
    padded_example_embeddings,
    padded_example_ids,
)
from helpers.plotting import (
    FIGURE_WIDTH,
    MASKED_COLOUR,
    TEXT_SIZE,
    TITLE_SIZE,
    Heatmap,
    cell_layer,
    new_figure,
    weight_texts,
)
from helpers.widgets.causal_masking import OUTSIDE_COLOUR
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    FigureExplorer,
    closes_the_one_before,
)

# What is handed to F.scaled_dot_product_attention, built from the mask you meant
# (``allowed``, True = may attend): its label in the explorer.
PASSED_MASKS = {
    "allowed": "bool, True = may attend",
    "blocked": "bool, True = blocked (masked_fill's mask)",
    "float01": "float 0/1 (1 = may attend)",
    "additive": "additive: 0 and -inf",
    "is_causal": "is_causal=True (no attn_mask)",
}
PASSED_TEXTS = {  # what the caption says was passed
    "allowed": "attn_mask = a boolean mask, True = may attend",
    "blocked": "attn_mask = masked_fill's boolean mask, True = blocked",
    "float01": "attn_mask = a float mask, 1.0 = may attend, 0.0 = blocked",
    "additive": "attn_mask = an additive float mask, 0.0 = may attend, -inf = blocked",
    "is_causal": "is_causal=True, and no attn_mask",
}
MEANT_TITLE = "what you meant\ncausal, no padded key"
COMPUTED_TITLE = "what SDPA computed\n(values = identity)"
PADDINGS = {"none": "none", "right": "right (2 pads)", "left": "left (2 pads)"}
N_PADS = 2  # padded positions of a padded sequence
SHOWN_DIFFERENCE = 0.005  # below this, the weights written with two decimals are the same


def passed_mask(allowed: torch.Tensor, passed: str):
    """What ``passed`` hands to ``F.scaled_dot_product_attention`` for the mask you meant,
    ``allowed`` (True = may attend): ``(attn_mask, is_causal)``."""
    if passed == "allowed":
        return allowed, False
    if passed == "blocked":
        return ~allowed, False  # masked_fill's mask: True = blocked
    if passed == "float01":
        return allowed.float(), False  # added to the scores: +1 or +0
    if passed == "additive":
        return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf")), False
    if passed == "is_causal":
        return None, True  # SDPA builds its own causal mask; it takes no padding with it
    raise ValueError(f"passed must be one of {list(PASSED_MASKS)}, got {passed!r}")


@dataclass(frozen=True)
class PyTorchAttentionView:
    """What the explorer shows. Both matrices are (T, T) over the whole sequence: the rows
    of the tokens that are not queries (when T_q < T, the first T - T_q) hold 0 and are
    drawn faded out."""

    passed: str  # a key of PASSED_MASKS
    padding: str  # a key of PADDINGS
    T_q: int  # the queries: the last T_q tokens
    token_labels: tuple  # (T,) "position:token", "pad" for padding
    is_query: np.ndarray  # (T,) bool
    allowed: np.ndarray  # (T, T) bool: the mask you meant (query rows; False elsewhere)
    meant: np.ndarray  # (T, T) the weights you meant, helpers.attention's
    computed: np.ndarray  # (T, T) the weights F.scaled_dot_product_attention computed
    computed_shown: np.ndarray  # (T, T) bool: query cells with a weight other than 0
    meant_text: np.ndarray  # (T, T) strings written in the cells
    computed_text: np.ndarray
    largest: float  # the largest |computed - meant| over the query rows
    largest_at: tuple  # (row, column) of it in the (T, T) grid
    caption: str  # three lines: what was passed, what SDPA did with it, the largest difference


def _meaning(passed: str, padding: str, T_q: int, T: int) -> str:
    """What F.scaled_dot_product_attention does with what was passed, in words."""
    if passed == "allowed":
        return "SDPA's own convention: each query attends to exactly the keys you meant"
    if passed == "blocked":
        return ("SDPA reads a boolean True as may attend: each query sees only what it "
                "should not")
    if passed == "float01":
        return ("a float attn_mask is ADDED to the scores: +1 or +0 blocks no key, it tilts "
                "the weights")
    if passed == "additive":
        return "a float attn_mask is ADDED to the scores: +0 keeps a score, -inf removes it"
    own = "is_causal=True: its own causal mask"
    if T_q < T and padding != "none":
        return f"{own}, aligned top-left (query i sees keys 0..i), no padding"
    if T_q < T:
        if T_q == 1:
            return f"{own}, top-left: the last query gets the first row"
        return f"{own}, top-left: the last {T_q} queries get the first rows"
    if padding != "none":
        return f"{own}, and no padding (SDPA takes no attn_mask with it)"
    return "is_causal=True: SDPA builds the causal mask itself, right when T_q = T_k"


def pytorch_attention_view(passed: str, padding: str, T_q: int, *,
                           seed: int = REFERENCE_SEED) -> PyTorchAttentionView:
    """What ``pytorch_attention_explorer`` shows for one choice of its controls.

    The sequence: the running example's six positions, with ``padding`` "none", or
    ``N_PADS`` pads on the "right" or "left" of its first tokens (pad embedded as zeros,
    ``helpers.data.padded_example_embeddings``). Queries and keys: the query and key layers
    of ``example_self_attention(seed)``; the queries are the last ``T_q`` tokens.

    What you meant: causal, aligned bottom-right (query i is token T - T_q + i and sees
    the keys up to itself), and never a padded key; its weights are
    ``helpers.attention.attention_weights``'. What SDPA computed:
    ``F.scaled_dot_product_attention`` called with the mask ``passed`` builds from it
    (``passed_mask``) and with the identity matrix as the values, so that its output,
    weights @ I, IS its weight matrix. Queries, keys and values are 3-D, (1, T, d): SDPA's
    math path, whatever the machine.
    """
    if padding not in PADDINGS:
        raise ValueError(f"padding must be one of {list(PADDINGS)}, got {padding!r}")
    T = len(TOKENS)
    if not 1 <= T_q <= T:
        raise ValueError(f"T_q must be between 1 and {T}, got {T_q}")
    length = T if padding == "none" else T - N_PADS
    ids = padded_example_ids([length], T, side="right" if padding == "none" else padding)
    is_token = ids[0] != PAD_ID  # (T,)
    module = example_self_attention(seed)
    x = padded_example_embeddings(ids)  # (1, T, d_in)
    with torch.no_grad():
        queries = module.W_query(x)[:, T - T_q:]  # (1, T_q, d): the last T_q tokens
        keys = module.W_key(x)  # (1, T, d)
        allowed = causal_mask(T)[T - T_q:] & is_token  # (T_q, T): bottom-right, real keys
        meant = attention_weights(queries, keys, attn_mask=allowed)[0]  # (T_q, T)
        attn_mask, is_causal = passed_mask(allowed, passed)
        identity = torch.eye(T)[None]  # (1, T, T) values: the output is the weights
        computed = F.scaled_dot_product_attention(queries, keys, identity, attn_mask=attn_mask,
                                                  is_causal=is_causal)[0]  # (T_q, T)

    def full(rows, fill):  # (T_q, T) -> (T, T): the query rows at the bottom
        grid = np.full((T, T), fill, dtype=np.asarray(rows).dtype)
        grid[T - T_q:] = rows
        return grid

    is_query = np.arange(T) >= T - T_q
    meant_grid, computed_grid = full(meant.numpy(), 0.0), full(computed.numpy(), 0.0)
    allowed_grid = full(allowed.numpy(), False)
    shown = (computed_grid != 0) & is_query[:, None]
    difference = np.abs(computed_grid - meant_grid)  # 0 in the rows that are not queries
    row, column = np.unravel_index(int(np.nanargmax(difference)), difference.shape)
    largest = float(difference[row, column])
    words = [TOKENS[i - 1] if i != PAD_ID else "pad" for i in ids[0].tolist()]
    labels = tuple(f"{j}:{word}" for j, word in enumerate(words))
    if largest >= SHOWN_DIFFERENCE:
        found = (f"largest difference from what you meant: {largest:.2f}, query "
                 f"{labels[row]}, key {labels[column]}")
    else:
        found = f"largest difference from what you meant: {largest:.4f}, the same weights"
    return PyTorchAttentionView(
        passed=passed, padding=padding, T_q=T_q, token_labels=labels, is_query=is_query,
        allowed=allowed_grid, meant=meant_grid, computed=computed_grid, computed_shown=shown,
        meant_text=weight_texts(meant_grid, allowed_grid),
        computed_text=weight_texts(computed_grid, shown), largest=largest,
        largest_at=(int(row), int(column)),
        caption=f"you pass: {PASSED_TEXTS[passed]}\n{_meaning(passed, padding, T_q, T)}\n"
                f"{found}")


def legend_entries(view: PyTorchAttentionView) -> tuple:
    """What the legend names for ``view``: only what its picture shows. "masked": a query
    cell with weight 0 drawn grey, in either panel; "not a query": faded rows (T_q < T);
    "largest": the red outline of the largest difference."""
    masked = ((~view.allowed[view.is_query]).any()
              or (~view.computed_shown[view.is_query]).any())
    shown = {"masked": masked, "not a query": not view.is_query.all(),
             "largest": view.largest >= SHOWN_DIFFERENCE}
    return tuple(entry for entry, drawn in shown.items() if drawn)


class PyTorchAttentionDrawing:
    """Side by side: the weights you meant and the weights SDPA computed, (T, T) each, the
    rows of tokens that are not queries faded out, the largest difference outlined in
    both; the colour bar, the legend below (naming only what the picture shows), the
    caption above."""

    def __init__(self):
        T = len(TOKENS)
        self.figure = new_figure(figsize=(FIGURE_WIDTH, 5.4), layout="constrained")
        meant_ax, computed_ax = self.figure.subplots(1, 2)
        zeros = np.zeros((T, T))
        self.meant_map = Heatmap(meant_ax, zeros)
        self.computed_map = Heatmap(computed_ax, zeros)
        computed_ax.set_ylabel("")  # the rows are the same queries: named once, on the left
        self.faders = [cell_layer(ax, np.zeros((T, T, 4))) for ax in (meant_ax, computed_ax)]
        self.outlines = [ax.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False,
                                                edgecolor="red", linewidth=2.5))
                         for ax in (meant_ax, computed_ax)]
        colorbar = self.figure.colorbar(self.computed_map.image, ax=[meant_ax, computed_ax],
                                        shrink=0.8)
        colorbar.set_label("attention weight", fontsize=TEXT_SIZE)
        colorbar.ax.tick_params(labelsize=TEXT_SIZE)
        # The legend names only what the picture shows (legend_entries): laid out here
        # with every entry, so that the space below the panels fits any of them.
        self.legend_handles = {
            "masked": Patch(facecolor=MASKED_COLOUR, edgecolor="grey",
                            label="weight 0 (masked)"),
            "not a query": Patch(facecolor="white", edgecolor="grey",
                                 label="not a query (T_q < T)"),
            "largest": Patch(facecolor="none", edgecolor="red", linewidth=2,
                             label="largest difference"),
        }
        self.legend = self.figure.legend(handles=list(self.legend_handles.values()),
                                         loc="outside lower center", ncols=3,
                                         fontsize=TEXT_SIZE, frameon=False)
        self.legend_shown = tuple(self.legend_handles)
        self.caption = self.figure.suptitle(" \n \n ", fontsize=TITLE_SIZE)
        # Laid out once, with the widest token labels and titles the controls can bring:
        # every later one fits, and the panels never move (the explorer keeps this layout).
        widest = [f"{j}:{max(TOKENS, key=len)}" for j in range(T)]
        self.meant_map.set_token_labels(widest, widest)
        self.computed_map.set_token_labels([""] * T, widest)
        meant_ax.set_title(MEANT_TITLE, fontsize=TITLE_SIZE)
        computed_ax.set_title(COMPUTED_TITLE, fontsize=TITLE_SIZE)
        layout = self.figure.get_layout_engine()
        layout.set(w_pad=6 / 72, h_pad=4 / 72)
        layout.execute(self.figure)
        self.figure.set_layout_engine("none")
        # What draw changes, and each panel's frame, drawn over its cells. The panels'
        # titles never change. The legend is animated too: draw builds a new one, with
        # the entries the picture needs, when they change.
        self.animated = [*self.meant_map.artists(), *self.computed_map.artists(),
                         *self.faders, *self.outlines, *meant_ax.spines.values(),
                         *computed_ax.spines.values(), self.caption, self.legend]

    def show_legend(self, entries: tuple):
        """A new legend below the panels, with ``entries`` (keys of ``legend_handles``), in
        the place the layout kept for the legend; none if there are none."""
        if entries == self.legend_shown:
            return
        self.animated.remove(self.legend)
        self.legend.remove()
        self.legend = self.figure.legend(
            handles=[self.legend_handles[entry] for entry in entries], loc="lower center",
            ncols=max(len(entries), 1), fontsize=TEXT_SIZE, frameon=False)
        self.legend.set_visible(bool(entries))
        # Never drawn in the background: blitted over it, as the other animated artists.
        self.legend.set_animated(True)
        self.animated.append(self.legend)
        self.legend_shown = entries

    def draw(self, view: PyTorchAttentionView):
        self.meant_map.set_token_labels(view.token_labels, view.token_labels)
        self.computed_map.set_token_labels(None, view.token_labels)
        self.meant_map.update(view.meant, mask=view.allowed, cell_text=view.meant_text)
        self.computed_map.update(view.computed, mask=view.computed_shown,
                                 cell_text=view.computed_text)
        faded = np.zeros(view.meant.shape + (4,))
        faded[~view.is_query] = OUTSIDE_COLOUR
        row, column = view.largest_at
        for fader, outline in zip(self.faders, self.outlines, strict=True):
            fader.set_array(faded)
            outline.set_xy((column - 0.5, row - 0.5))
            outline.set_visible(view.largest >= SHOWN_DIFFERENCE)
        self.caption.set_text(view.caption)
        self.show_legend(legend_entries(view))
        return view.token_labels  # the tick labels


@closes_the_one_before
def pytorch_attention_explorer(seed: int = REFERENCE_SEED, *, passed: str = "blocked",
                               padding: str = "none", T_q: int = len(TOKENS)) -> FigureExplorer:
    """Notebook 07: what ``F.scaled_dot_product_attention`` computes for the mask you hand
    it, beside what you meant.

    The running example's six tokens (or its first four, padded with two pads on the
    right or on the left) go through the query and key layers of
    ``example_self_attention(seed)``. Controls: what you pass to SDPA (a boolean mask True
    = may attend, masked_fill's mask True = blocked, a float 0/1 mask, an additive 0/-inf
    mask, or ``is_causal=True`` without a mask), the padding, and the number of queries
    T_q (the last T_q tokens, as when new tokens attend over a cache of all the keys).
    Left: the weights you meant (causal, aligned bottom-right, no padded key), from
    ``helpers.attention``. Right: the weights SDPA computed, obtained by calling it with
    the identity matrix as the values, so that its output IS the weight matrix. The
    caption says what SDPA did with the mask and the largest difference, outlined in red.
    ``passed``, ``padding`` and ``T_q`` set the controls' first values: by default the
    pitfall, masked_fill's mask (True = blocked) handed to SDPA, on the whole sequence.
    """
    T = len(TOKENS)
    controls = {
        "passed": widgets.Dropdown(
            options=[(label, key) for key, label in PASSED_MASKS.items()], value=passed,
            description="what you pass to SDPA", style=CONTROL_STYLE,
            layout=widgets.Layout(width="auto", min_width="420px")),
        "padding": widgets.ToggleButtons(
            options=[(label, key) for key, label in PADDINGS.items()], value=padding,
            description="padding", style=CONTROL_STYLE),
        "T_q": widgets.IntSlider(
            value=T_q, min=1, max=T, description="queries T_q (the last tokens)",
            continuous_update=True, style=CONTROL_STYLE, layout=CONTROL_LAYOUT),
    }
    return FigureExplorer(controls, partial(pytorch_attention_view, seed=seed),
                          PyTorchAttentionDrawing())
