"""Heatmaps of attention weights.

``plot_attention`` draws one heatmap per (T_q, T_k) matrix and returns the Figure, so a
notebook shows it (``attention_heatmaps`` returns the heatmaps too). ``Heatmap`` is the
drawing it is made of: widgets keep one and call ``Heatmap.update`` to change it in
place. Every cell's value is written in it by ``CellLabels``.

Type scale: every figure is at most ``FIGURE_WIDTH`` (8.5) inches wide, so that drawn at
matplotlib's 100 dpi it is 850 px wide, as wide as a notebook column on a laptop and
shown unscaled on a 1280 x 720 slide, and its smallest text is ``TEXT_SIZE`` (11) pt:
readable on a laptop and from the back of a room. Cell values, tick labels and axis
labels are ``TEXT_SIZE``, titles ``TITLE_SIZE``.

Three kinds of cell are told apart:
- an ordinary weight, coloured on a fixed scale (0 to 1 by default);
- a masked cell (the mask says the query may not attend there): light grey, no number;
- a NaN cell: bright orange, marked "NaN", never a colour of the weight scale.
"""

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection, QuadMesh
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Affine2D, IdentityTransform

from helpers.validation import check_tensor

CMAP = "viridis"
SCORES_CMAP = "RdBu_r"  # scores, not weights: diverging, centred on 0 (red > 0 > blue)
MASKED_COLOUR = "#d9d9d9"
NAN_COLOUR = "#ff7f0e"
MAX_ANNOTATED_TOKENS = 8
# Every figure of the course is FIGURE_WIDTH wide with no text under TEXT_SIZE: shown 850 px
# wide in a notebook column, or full width on a 1280 x 720 slide, its text stays readable
# from the back of a room (tests/test_type_scale.py measures it). Said here once.
FIGURE_WIDTH = 8.5  # inches: 850 px at 100 dpi, the widest a figure is drawn
TEXT_SIZE = 11  # pt: the smallest text of a figure (cell values, ticks, labels, legends)
TITLE_SIZE = 12  # pt: titles of panels
CELL_LABELS_GID = "cell-labels"  # the gid of every CellLabels' collection


def new_figure(**kwargs) -> Figure:
    """A matplotlib Figure (``kwargs`` as for ``matplotlib.figure.Figure``: figsize,
    layout, ...) with an Agg canvas, made without pyplot: pyplot keeps no reference to it
    and shows it at no cell's end by itself. Whoever asked for it shows it: a notebook
    cell that ends with it, an explorer that renders it."""
    figure = Figure(**kwargs)
    FigureCanvasAgg(figure)
    return figure


def figure_description(figure) -> str:
    """What a figure shows, in words, for a reader who cannot see it (an image's alt text):
    the figure's label when it has one (``figure.set_label``), else its title and, for each
    panel, what it is (a heatmap, bars, a plot), its title and its axes, read from the
    figure itself."""
    if figure.get_label():
        return figure.get_label()
    panels = []
    for ax in figure.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        if ax.get_label() == "<colorbar>":
            label = ax.get_ylabel() or ax.get_xlabel()
            panels.append(f"a colour bar{f' for {label}' if label else ''}")
            continue
        meshes = [c for c in ax.collections if isinstance(c, QuadMesh) and c.get_visible()]
        kind = ("a heatmap" if ax.get_images() or meshes
                else "bars" if ax.containers else "a plot")
        title = " ".join(ax.get_title().split())
        axes = " against ".join(" ".join(label.split())
                                for label in (ax.get_ylabel(), ax.get_xlabel()) if label)
        panels.append(kind + (f" titled '{title}'" if title else "")
                      + (f", {axes}" if axes else ""))
    title = " ".join(figure.get_suptitle().split())
    sentence = f"{title}. " if title else ""
    if not panels:
        return sentence.strip() or "An empty figure."
    count = "One panel" if len(panels) == 1 else f"{len(panels)} panels"
    return f"{sentence}{count}: " + "; ".join(panels) + "."


def _as_array(values, name: str) -> np.ndarray:
    if isinstance(values, np.ndarray):
        values = torch.from_numpy(values)
    check_tensor(values, name, ndim=(2, 3, 4), floating=False)
    if values.dtype == torch.bool:
        raise TypeError(f"{name} must hold numbers, got a boolean tensor")
    return values.detach().cpu().double().numpy()


def cell_layer(ax, values, **colour_scale):
    """One coloured square per matrix cell, cell (i, j) centred on (x=j, y=i): (T_q, T_k)
    values coloured by ``colour_scale`` (cmap, vmin, vmax), or (T_q, T_k, 4) RGBA colours
    (a transparent cell shows what is under it). Change it with ``set_array``, same shape.

    Drawn as a mesh of squares rather than an image: redrawing it takes well under a
    millisecond, where an image resampled to the screen takes several."""
    T_q, T_k = np.shape(values)[:2]
    return ax.pcolormesh(np.arange(T_k + 1) - 0.5, np.arange(T_q + 1) - 0.5, values,
                         antialiased=False, edgecolors="none", linewidth=0, **colour_scale)


class CellLabels:
    """A short text centred in every cell of a (T_q, T_k) grid ("0.25", "NaN", "✓"), drawn
    as one collection of glyph outlines: one artist for the whole grid, which redraws in
    well under a millisecond where T_q x T_k separate texts take tens of milliseconds.
    Each string's outline is made once at a size of 1 (``matplotlib.textpath.TextPath``)
    and kept; the collection scales every outline to ``fontsize`` points as ``scatter``
    scales its markers (its size, ``collection.get_sizes()``, is in points squared:
    ``fontsize ** 2``). The collection's gid is ``CELL_LABELS_GID``.

    ``set(texts, colours)`` shows new strings: ``texts`` is (T_q, T_k) strings ("" for an
    empty cell), ``colours`` (T_q, T_k) colours. ``texts`` is what is shown now."""

    def __init__(self, ax, T_q: int, T_k: int, *, fontsize: float = TEXT_SIZE):
        columns, rows = np.meshgrid(np.arange(T_k), np.arange(T_q))
        self.collection = PathCollection(
            [EMPTY_PATH] * (T_q * T_k), sizes=[fontsize ** 2],
            offsets=np.column_stack([columns.ravel(), rows.ravel()]),
            offset_transform=ax.transData, transform=IdentityTransform(), edgecolors="none",
            linewidths=0, zorder=3, gid=CELL_LABELS_GID)
        ax.add_collection(self.collection, autolim=False)
        self.texts = np.full((T_q, T_k), "", dtype=object)

    @property
    def fontsize(self) -> float:
        """The labels' size in points."""
        return float(np.sqrt(self.collection.get_sizes()[0]))

    def set(self, texts, colours):
        texts = np.asarray(texts, dtype=object)
        if texts.shape != self.texts.shape:
            raise ValueError(f"expected {self.texts.shape} cell texts, got shape {texts.shape}")
        self.texts = texts.copy()
        self.collection.set_paths([centred_text_path(str(text), 1.0) for text in texts.ravel()])
        self.collection.set_facecolor([to_rgba(colour) for row in colours for colour in row])


EMPTY_PATH = Path(np.zeros((0, 2)))
_TEXT_PATHS = {}  # (text, fontsize): its outline, see centred_text_path


def centred_text_path(text: str, fontsize: float) -> Path:
    """The outline of ``text`` in points, centred on (0, 0): across its ink, and upwards
    on the middle of a digit's height (so that strings with and without descenders share
    a baseline). Kept once made."""
    key = (text, fontsize)
    if key not in _TEXT_PATHS:
        if not text.strip():
            _TEXT_PATHS[key] = EMPTY_PATH
        else:
            font = FontProperties(size=fontsize)
            path = TextPath((0, 0), text, prop=font)
            (left, _), (right, _) = ink_box(path)
            _, (_, digit_height) = ink_box(TextPath((0, 0), "0", prop=font))
            _TEXT_PATHS[key] = path.transformed(
                Affine2D().translate(-(left + right) / 2, -digit_height / 2))
    return _TEXT_PATHS[key]


def ink_box(outline: Path) -> tuple:
    """((xmin, ymin), (xmax, ymax)) of a glyph outline: the box of its points. Fonts put a
    point at each extreme of a glyph's curves, so this is the box of its ink, as
    ``outline.get_extents()`` finds it by solving for every curve's extremes, about a
    hundred times slower (10 to 15 ms a string of digits on a slow 2-core machine: an
    explorer's move that shows a dozen new values spent most of its time there)."""
    points = outline.vertices[~np.isin(outline.codes, [Path.CLOSEPOLY, Path.STOP])]
    return tuple(points.min(axis=0)), tuple(points.max(axis=0))


def readable_text_colour(background) -> str:
    """Black on a light cell, white on a dark one (relative luminance of the cell)."""
    red, green, blue = (channel / 12.92 if channel <= 0.04045 else
                        ((channel + 0.055) / 1.055) ** 2.4 for channel in to_rgb(background))
    return "black" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.3 else "white"


def weight_texts(weights, allowed=None) -> np.ndarray:
    """What a heatmap writes in its cells by default: each weight to two decimals
    ("0.25"), "NaN" for NaN, nothing where ``allowed`` (boolean, True = may attend) is
    False. A (T_q, T_k) array of strings, for a caller that changes a few of them."""
    weights = np.asarray(weights, dtype=float)
    allowed = np.ones(weights.shape, dtype=bool) if allowed is None else allowed
    texts = np.full(weights.shape, "", dtype=object)
    texts[allowed] = [f"{value:.2f}" for value in weights[allowed]]
    texts[np.isnan(weights)] = "NaN"
    return texts


class Heatmap:
    """One attention matrix drawn on an Axes, updatable in place.

    ``weights`` is (T_q, T_k); ``mask`` (optional, boolean, broadcastable to it) is True
    where attending is allowed. ``value_range`` fixes the colour scale. With ``annotate``
    each cell shows its value (``cell_labels``, a ``CellLabels``), by default when
    T <= 8; ``update`` can show other texts in the cells instead.
    """

    def __init__(self, ax, weights, *, mask=None, row_labels=None, col_labels=None,
                 value_range=(0.0, 1.0), annotate=None, title=None):
        self.ax = ax
        weights = self._check_matrix(weights)
        T_q, T_k = weights.shape
        self.annotate = max(T_q, T_k) <= MAX_ANNOTATED_TOKENS if annotate is None else annotate
        vmin, vmax = value_range
        self.image = cell_layer(ax, np.zeros((T_q, T_k)), cmap=CMAP, vmin=vmin, vmax=vmax)
        self.overlay = cell_layer(ax, np.zeros((T_q, T_k, 4)))
        ax.set_xlim(-0.5, T_k - 0.5)
        ax.set_ylim(T_q - 0.5, -0.5)  # row 0 at the top, as in a printed matrix
        ax.set_aspect("equal")
        self.cell_labels = CellLabels(ax, T_q, T_k) if self.annotate else None
        self._token_labels = {}  # "rows", "columns": the labels set last
        ax.set_xlabel("key (attended to)", fontsize=TEXT_SIZE)
        ax.set_ylabel("query (attending)", fontsize=TEXT_SIZE)
        ax.tick_params(labelsize=TEXT_SIZE)
        self.set_token_labels(row_labels or range(T_q), col_labels or range(T_k))
        if title:
            ax.set_title(title, fontsize=TITLE_SIZE)
        self.update(weights, mask=mask)

    def artists(self) -> list:
        """What it draws on its Axes: the cells, the mask's layer, the cells' texts."""
        return [self.image, self.overlay,
                *([] if self.cell_labels is None else [self.cell_labels.collection])]

    def take_axes(self):
        """Show this heatmap's extent and tick labels on its Axes again, after another
        heatmap of another size was shown there (its artists added back by the caller)."""
        T_q, T_k = self.image.get_array().shape[:2]
        self.ax.set_xlim(-0.5, T_k - 0.5)
        self.ax.set_ylim(T_q - 0.5, -0.5)
        labels, self._token_labels = self._token_labels, {}
        self.set_token_labels(labels.get("rows"), labels.get("columns"))

    def set_token_labels(self, row_labels=None, col_labels=None):
        """Name the rows (queries) and columns (keys), as tick labels. They are set only
        when they differ from those shown (setting tick labels takes a few milliseconds)."""
        T_q, T_k = self.image.get_array().shape[:2]
        for side, labels, size in (("rows", row_labels, T_q), ("columns", col_labels, T_k)):
            if labels is None:
                continue
            labels = [str(label) for label in labels]
            if len(labels) != size:
                raise ValueError(f"expected {size} token labels for the {side}, got "
                                 f"{len(labels)}")
            if self._token_labels.get(side) == labels:
                continue
            self._token_labels[side] = labels
            if side == "rows":
                self.ax.set_yticks(range(size), labels=labels)
            elif max(len(label) for label in labels) == 1:  # single letters or digits: upright
                self.ax.set_xticks(range(size), labels=labels, rotation=0, ha="center")
            else:  # words: slanted, so that neighbours do not run into each other
                self.ax.set_xticks(range(size), labels=labels, rotation=45, ha="right")

    def _check_matrix(self, weights) -> np.ndarray:
        array = _as_array(weights, "weights")
        if array.ndim != 2:
            raise ValueError(f"a Heatmap draws one (T_q, T_k) matrix, got shape {array.shape}")
        if hasattr(self, "image") and array.shape != self.image.get_array().shape:
            raise ValueError(
                f"weights changed shape from {self.image.get_array().shape} to {array.shape}; "
                "draw a new Heatmap for a new size"
            )
        return array

    def update(self, weights, *, mask=None, cell_text=None):
        """Show new weights (and mask) in the same artists. Each cell shows its value
        ("NaN" for NaN, nothing where masked), or the string ``cell_text[i][j]`` if given
        (a (T_q, T_k) grid of strings, e.g. "kept" and "drop")."""
        weights = self._check_matrix(weights)
        allowed = np.ones(weights.shape, dtype=bool)
        if mask is not None:
            if isinstance(mask, torch.Tensor):
                mask = mask.detach().cpu().numpy()
            try:
                allowed = np.broadcast_to(np.asarray(mask, dtype=bool), weights.shape)
            except ValueError:
                raise ValueError(
                    f"mask of shape {np.shape(mask)} does not fit weights of shape "
                    f"{weights.shape}"
                ) from None
        is_nan = np.isnan(weights)
        shown = np.where(is_nan, 0.0, weights)
        self.image.set_array(shown)
        overlay = np.zeros(weights.shape + (4,))
        overlay[~allowed] = to_rgba(MASKED_COLOUR)
        overlay[is_nan] = to_rgba(NAN_COLOUR)
        self.overlay.set_array(overlay)
        self.overlay.set_visible(bool((~allowed).any() or is_nan.any()))  # skip a clear layer
        self.masked = ~allowed
        self.nan = is_nan
        if self.cell_labels is None:
            return self
        if cell_text is None:
            cell_text = weight_texts(weights, allowed)
        cell_colours = np.where(overlay[..., 3:] > 0, overlay,
                                self.image.cmap(self.image.norm(shown)))
        self.cell_labels.set(cell_text, [[readable_text_colour(colour) for colour in row]
                                         for row in cell_colours])
        return self

    @property
    def cell_text(self):
        """The (T_q, T_k) strings the cells show now (all "" without annotations)."""
        if self.cell_labels is None:
            return np.full(self.image.get_array().shape[:2], "", dtype=object)
        return self.cell_labels.texts


def _legend_handles(masked: bool, nan: bool):
    handles = []
    if masked:
        handles.append(Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked"))
    if nan:
        handles.append(Patch(facecolor=NAN_COLOUR, edgecolor="grey", label="NaN"))
    return handles


def plot_attention(weights, **options) -> Figure:
    """Draw attention weights as labelled heatmaps; return the matplotlib Figure. The
    arguments are ``attention_heatmaps``'s."""
    figure, _ = attention_heatmaps(weights, **options)
    return figure


def token_names_per_heatmap(name: str, given, count: int, size: int) -> list:
    """``given`` names ``size`` tokens for every heatmap, or is a list of ``count`` such
    lists, one per heatmap; None leaves them numbered. One list (or None) per heatmap."""
    if given is None:
        return [None] * count
    one_each = len(given) > 0 and all(isinstance(names, (list, tuple)) for names in given)
    if one_each and len(given) != count:
        raise ValueError(f"{name} must give one list of token names per heatmap ({count}), "
                         f"got {len(given)} lists")
    lists = list(given) if one_each else [given] * count
    for names in lists:
        if len(names) != size:
            raise ValueError(f"{name} must name {size} tokens, got {len(names)}")
    return lists


def attention_heatmaps(weights, *, mask=None, labels=None, row_labels=None, col_labels=None,
                       titles=None, value_range=(0.0, 1.0), annotate=None, cell_size=None,
                       colorbar_label="attention weight") -> tuple:
    """Draw attention weights as labelled heatmaps; return the Figure and its
    ``Heatmap``s, one per matrix, in order (to change one afterwards, or to test them).

    weights: (T, T), (H, T_q, T_k) or (B, H, T_q, T_k), a tensor or an array. A 3-d input
    draws one heatmap per head, a 4-d input one per sequence and head, side by side as
    many as fit in ``FIGURE_WIDTH``, in rows.
    mask: optional boolean, True where attending is allowed, broadcastable to weights;
    masked cells are drawn light grey without a number, NaN cells orange with "NaN".
    labels: token names for both axes (or row_labels / col_labels separately); one list
    for every heatmap, or a list of lists, one per heatmap (sequences in different orders).
    value_range: the colour scale, fixed so that pictures can be compared; None scales
    to the data (for scores, which are not probabilities).
    annotate: write the value in each cell; by default only when T <= 8.
    colorbar_label: what the colours show (e.g. "attention weight after dropout").
    cell_size: the side of a cell in inches, by default 0.45 (0.4 when the heatmaps take
    two rows or more, so that they fit a slide's height; less where T_k cells would not
    fit FIGURE_WIDTH): cells hold their values at TEXT_SIZE.
    """
    array = _as_array(weights, "weights")
    grid = array.reshape((1, 1) + array.shape[-2:]) if array.ndim == 2 else \
        array.reshape((1,) + array.shape) if array.ndim == 3 else array
    B, H, T_q, T_k = grid.shape
    mask_grid = None
    if mask is not None:
        mask_array = mask.detach().cpu().numpy() if isinstance(mask, torch.Tensor) else \
            np.asarray(mask)
        if mask_array.dtype != bool:
            raise TypeError(f"mask must be boolean (True = may attend), got {mask_array.dtype}")
        try:
            mask_grid = np.broadcast_to(mask_array, array.shape).reshape(grid.shape)
        except ValueError:
            raise ValueError(
                f"mask of shape {mask_array.shape} cannot be broadcast to weights of shape "
                f"{array.shape}"
            ) from None
    if value_range is None:
        finite = grid[np.isfinite(grid)]
        value_range = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    count = B * H
    row_names = token_names_per_heatmap("row_labels", row_labels or labels, count, T_q)
    col_names = token_names_per_heatmap("col_labels", col_labels or labels, count, T_k)
    if titles is not None and len(titles) != B * H:
        raise ValueError(f"titles must give one title per heatmap ({B * H}), got {len(titles)}")

    # One panel per matrix, as many side by side as FIGURE_WIDTH holds, in rows; the
    # inches around a panel's cells hold its tick labels and title (and below the last
    # row, the axis label). A panel with another below it leaves the axis label to it.
    annotated = max(T_q, T_k) <= MAX_ANNOTATED_TOKENS if annotate is None else annotate

    def widest_cell(columns):  # the colour bar and each panel's labels take an inch each
        return min(0.45, (FIGURE_WIDTH - 1.0 - columns) / (columns * T_k))

    # As many columns as leave cells room for their values at TEXT_SIZE (or, without
    # values, for the tick labels).
    smallest_cell = 0.4 if annotated else 0.17
    columns = next((n for n in range(count, 0, -1) if widest_cell(n) >= smallest_cell), 1)
    rows = -(-count // columns)
    if cell_size is None:  # two rows of 6 x 6 cells fit a slide's height at 0.4
        cell_size = min(0.45 if rows == 1 else 0.4, widest_cell(columns))
    spare = rows * columns - count  # empty places in the last row: the legend goes there
    title_lines = max((str(title).count("\n") + 1 for title in titles), default=1) \
        if titles else 1
    # A panel as wide as its longest title line (about 0.55 em a character), so that a
    # title does not run under its neighbour or the colour bar.
    longest = max((len(line) for title in titles or () for line in str(title).split("\n")),
                  default=0)
    panel = max(cell_size * T_k + 1.0, longest * 0.55 * TITLE_SIZE / 72 + 0.3)
    width = min(FIGURE_WIDTH, columns * panel + 1.0)
    height = rows * (cell_size * T_q + 0.85 + 0.2 * title_lines) + 0.3 + \
        (0.0 if spare else 0.35)
    fig = new_figure(layout="constrained", figsize=(width, height))
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[count:]:
        ax.set_axis_off()
    heatmaps = []
    for b in range(B):
        for h in range(H):
            index = b * H + h
            title = titles[index] if titles else (
                f"sequence {b}, head {h}" if array.ndim == 4 else
                f"head {h}" if array.ndim == 3 else None)
            heatmaps.append(Heatmap(
                axes[index], grid[b, h], mask=None if mask_grid is None else mask_grid[b, h],
                row_labels=row_names[index], col_labels=col_names[index],
                value_range=value_range,
                annotate=annotate, title=title))
            if index + columns < count:
                axes[index].set_xlabel("")
    colorbar = fig.colorbar(heatmaps[0].image, ax=axes[:count], shrink=0.8)
    colorbar.set_label(colorbar_label, fontsize=TEXT_SIZE)
    colorbar.ax.tick_params(labelsize=TEXT_SIZE)
    handles = _legend_handles(any(m.masked.any() for m in heatmaps),
                              any(m.nan.any() for m in heatmaps))
    if handles and spare:
        axes[-1].legend(handles=handles, loc="center", fontsize=TEXT_SIZE)
    elif handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles),
                   fontsize=TEXT_SIZE)
    return fig, heatmaps


def plot_distributions(distributions: dict, labels, *, title=None, shared_scale=True,
                       marked=(), marked_label=None):
    """Draw probability distributions over the same tokens as bar charts, one panel per
    distribution, one above the other; return the Figure.

    distributions: {name: probabilities (V,)}, each a 1-d tensor or array of V numbers in
    [0, 1] (a softmax's output, the probabilities a next token is drawn from); each name is
    its panel's title, followed by how many tokens have a probability above 0 (can be
    chosen). labels: the V token names under the bars. Every panel has the same scale, up
    to a little above the largest probability, so that panels compare; each labels its
    largest bar with its value. ``shared_scale=False`` gives each panel its own scale, up to
    a little above its own largest bar, so that a flat distribution's bars still differ in
    height (say so where the figure is shown: the panels then do not compare by height).
    marked: labels of tokens whose bars are drawn grey and hatched, named in a legend by
    ``marked_label`` (tokens the data rules out, say)."""
    if not isinstance(distributions, dict) or not distributions:
        raise TypeError(f"distributions must be a non-empty dict {{name: probabilities}}, got "
                        f"{type(distributions).__name__}")
    arrays = {}
    for name, probabilities in distributions.items():
        if isinstance(probabilities, np.ndarray):
            probabilities = torch.from_numpy(probabilities)
        check_tensor(probabilities, f"distributions[{name!r}]", ndim=1)
        array = probabilities.detach().cpu().double().numpy()
        if not (np.isfinite(array).all() and (array >= 0).all() and (array <= 1).all()):
            raise ValueError(f"distributions[{name!r}] must hold probabilities between 0 and "
                             "1, got values outside that range (or NaN)")
        arrays[name] = array
    sizes = {array.size for array in arrays.values()}
    if len(sizes) != 1 or len(labels) != sizes.pop():
        raise ValueError(f"labels must name every token of every distribution: got "
                         f"{len(labels)} labels for distributions of sizes "
                         f"{sorted(array.size for array in arrays.values())}")
    marked = list(marked)
    unknown = [label for label in marked if label not in list(labels)]
    if unknown:
        raise ValueError(f"marked must name tokens among the labels, got {unknown}")
    if marked and not (isinstance(marked_label, str) and marked_label):
        raise ValueError("marked_label must say what the marked bars are (a non-empty "
                         f"string) when marked is given, got {marked_label!r}")
    is_marked = np.array([label in marked for label in labels])
    largest = max(float(array.max()) for array in arrays.values())
    figure = new_figure(figsize=(FIGURE_WIDTH, 0.5 + 1.15 * len(arrays)), layout="constrained")
    axes = figure.subplots(len(arrays), 1, sharex=True, squeeze=False)[:, 0]
    positions = np.arange(len(labels))
    for ax, (name, array) in zip(axes, arrays.items(), strict=True):
        bars = ax.bar(positions, array, color="tab:blue", width=0.8)
        for bar, grey in zip(bars, is_marked, strict=True):
            if grey:
                bar.set(facecolor="0.6", hatch="///", edgecolor="0.3", label=marked_label,
                        linewidth=0.8 if bar.get_height() > 0 else 0)  # no line at 0
        top = int(array.argmax())
        ax.annotate(f"{array[top]:.2f}", (top, array[top]), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=TEXT_SIZE)
        scale = largest if shared_scale else float(array.max())
        ax.set_ylim(0, 1.45 * scale if scale > 0 else 1.0)  # room for the label
        ax.yaxis.set_major_locator(MaxNLocator(3))
        ax.set_title(f"{name}: {int((array > 0).sum())} of {array.size} possible",
                     fontsize=TITLE_SIZE)
        ax.set_ylabel("probability", fontsize=TEXT_SIZE)
        ax.tick_params(labelsize=TEXT_SIZE)
    axes[-1].set_xticks(positions, labels)
    axes[-1].set_xlabel("next token", fontsize=TEXT_SIZE)
    if marked:
        handles, names = axes[0].get_legend_handles_labels()
        figure.legend(handles[:1], names[:1], loc="outside lower center", fontsize=TEXT_SIZE)
    if title:
        figure.suptitle(title, fontsize=TITLE_SIZE)
    return figure
