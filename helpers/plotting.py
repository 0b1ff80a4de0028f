"""Heatmaps of attention weights.

``plot_attention`` draws one heatmap per (T_q, T_k) matrix and returns the Figure, so a
notebook shows it and a test can inspect it. ``Heatmap`` is the drawing it is made of:
widgets keep one and call ``Heatmap.update`` to change it in place.

Three kinds of cell are told apart:
- an ordinary weight, coloured on a fixed scale (0 to 1 by default);
- a masked cell (the mask says the query may not attend there): light grey, no number;
- a NaN cell: bright orange, marked "NaN", never a colour of the weight scale.
"""

import io

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.colors import to_rgba
from matplotlib.legend import Legend
from matplotlib.patches import Patch
from matplotlib.text import Text
from PIL import Image

from helpers.validation import check_tensor

CMAP = "viridis"
MASKED_COLOUR = "#d9d9d9"
NAN_COLOUR = "#ff7f0e"
MAX_ANNOTATED_TOKENS = 8


def _as_array(values, name: str) -> np.ndarray:
    if isinstance(values, np.ndarray):
        values = torch.from_numpy(values)
    check_tensor(values, name, ndim=(2, 3, 4), floating=False)
    if values.dtype == torch.bool:
        raise TypeError(f"{name} must hold numbers, got a boolean tensor")
    return values.detach().cpu().double().numpy()


class Heatmap:
    """One attention matrix drawn on an Axes, updatable in place.

    ``weights`` is (T_q, T_k); ``mask`` (optional, boolean, broadcastable to it) is True
    where attending is allowed. ``value_range`` fixes the colour scale.
    """

    def __init__(self, ax, weights, *, mask=None, row_labels=None, col_labels=None,
                 value_range=(0.0, 1.0), annotate=None, title=None):
        self.ax = ax
        weights = self._check_matrix(weights)
        T_q, T_k = weights.shape
        self.annotate = max(T_q, T_k) <= MAX_ANNOTATED_TOKENS if annotate is None else annotate
        vmin, vmax = value_range
        self.image = ax.imshow(np.zeros((T_q, T_k)), cmap=CMAP, vmin=vmin, vmax=vmax)
        self.overlay = ax.imshow(np.zeros((T_q, T_k, 4)))
        self.texts = [[ax.text(j, i, "", ha="center", va="center", fontsize=9)
                       for j in range(T_k)] for i in range(T_q)] if self.annotate else []
        ax.set_xticks(range(T_k), labels=col_labels or range(T_k), rotation=45, ha="right")
        ax.set_yticks(range(T_q), labels=row_labels or range(T_q))
        ax.set_xlabel("key (attended to)")
        ax.set_ylabel("query (attending)")
        if title:
            ax.set_title(title)
        self.update(weights, mask=mask)

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

    def update(self, weights, *, mask=None):
        """Show new weights (and mask) in the same artists."""
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
        self.image.set_data(np.where(is_nan, 0.0, weights))
        overlay = np.zeros(weights.shape + (4,))
        overlay[~allowed] = to_rgba(MASKED_COLOUR)
        overlay[is_nan] = to_rgba(NAN_COLOUR)
        self.overlay.set_data(overlay)
        self.overlay.set_visible(bool((~allowed).any() or is_nan.any()))  # skip a clear layer
        self.masked = ~allowed
        self.nan = is_nan
        vmin, vmax = self.image.get_clim()
        for i, row in enumerate(self.texts):
            for j, text in enumerate(row):
                value = weights[i, j]
                if is_nan[i, j]:
                    text.set_text("NaN")
                    text.set_color("black")
                elif not allowed[i, j]:
                    text.set_text("")
                else:
                    text.set_text(f"{value:.2f}")
                    light = (value - vmin) / (vmax - vmin) > 0.6 if vmax > vmin else False
                    text.set_color("black" if light else "white")
        return self


def _legend_handles(masked: bool, nan: bool):
    handles = []
    if masked:
        handles.append(Patch(facecolor=MASKED_COLOUR, edgecolor="grey", label="masked"))
    if nan:
        handles.append(Patch(facecolor=NAN_COLOUR, edgecolor="grey", label="NaN"))
    return handles


def plot_attention(weights, *, mask=None, labels=None, row_labels=None, col_labels=None,
                   titles=None, value_range=(0.0, 1.0), annotate=None, cell_size=0.6):
    """Draw attention weights as labelled heatmaps; return the matplotlib Figure.

    weights: (T, T), (H, T_q, T_k) or (B, H, T_q, T_k), a tensor or an array. A 3-d input
    draws one heatmap per head side by side; a 4-d input one row per sequence.
    mask: optional boolean, True where attending is allowed, broadcastable to weights;
    masked cells are drawn light grey without a number, NaN cells orange with "NaN".
    labels: token names for both axes (or row_labels / col_labels separately).
    value_range: the colour scale, fixed so that pictures can be compared; None scales
    to the data (for scores, which are not probabilities).
    annotate: write the value in each cell; by default only when T <= 8.
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
    row_labels = row_labels or labels
    col_labels = col_labels or labels
    for name, given, size in (("row_labels", row_labels, T_q), ("col_labels", col_labels, T_k)):
        if given is not None and len(given) != size:
            raise ValueError(f"{name} must name {size} tokens, got {len(given)}")
    if titles is not None and len(titles) != B * H:
        raise ValueError(f"titles must give one title per heatmap ({B * H}), got {len(titles)}")

    width = max(3.0, cell_size * T_k + 1.6)
    height = max(2.8, cell_size * T_q + 1.4)
    fig, axes = plt.subplots(B, H, figsize=(width * H + 0.8, height * B), squeeze=False,
                             layout="constrained")
    plt.close(fig)  # the caller shows it; pyplot keeps no reference
    heatmaps = []
    for b in range(B):
        for h in range(H):
            index = b * H + h
            title = titles[index] if titles else (
                f"sequence {b}, head {h}" if array.ndim == 4 else
                f"head {h}" if array.ndim == 3 else None)
            heatmaps.append(Heatmap(
                axes[b, h], grid[b, h], mask=None if mask_grid is None else mask_grid[b, h],
                row_labels=row_labels, col_labels=col_labels, value_range=value_range,
                annotate=annotate, title=title))
    fig.colorbar(heatmaps[0].image, ax=axes, shrink=0.8, label="attention weight")
    handles = _legend_handles(any(m.masked.any() for m in heatmaps),
                              any(m.nan.any() for m in heatmaps))
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))
    fig.heatmaps = heatmaps
    return fig


class FigureRenderer:
    """Re-renders a figure as PNG after in-place changes, redrawing only what changed.

    An explorer changes a few artists (an image's data, some texts, bar heights) and
    leaves the rest (tick labels, axis labels, legends) alone, yet a full draw spends
    most of its time on that unchanged text. So the renderer learns which artists
    change (matplotlib marks a changed artist *stale*), draws everything else once as a
    background, and for each new frame restores the background and draws only the
    changed artists, plus whatever sits above them in the same Axes (spines, legends,
    lines), in matplotlib's own z-order. Anything it cannot explain (a new or removed
    artist, new axis limits, a changed size) triggers a full draw and a new background,
    so a frame always equals a full draw of the figure.

    Text redrawn on a frame comes from a cache of rendered strings (see
    ``_SpriteTextRenderer``; ``text_sprites=False`` turns it off). The PNG is encoded
    from the Agg buffer as RGB with fast compression.
    """

    def __init__(self, figure, *, dpi: int = 100, text_sprites: bool = True):
        self.figure = figure
        self.text_sprites = text_sprites
        figure.set_dpi(dpi)
        self.canvas = FigureCanvasAgg(figure)
        self._foreground = []  # [(container, artist)], drawn in this order on each frame
        self._background = None
        self._text_renderer = _SpriteTextRenderer(None)
        self._axes_shown = None  # which Axes were visible when the background was drawn
        self.full_draws = 0  # how many frames needed a full draw (a test looks)

    def png(self) -> bytes:
        """The figure as it is now, as PNG bytes."""
        changed = self._changed_artists()
        drawn = {artist for _container, artist in self._foreground}
        try:
            if self._background is None:
                self._redraw_background(set())  # nothing is known to change yet
            elif changed is None or not changed <= drawn:
                self._redraw_background(drawn | (changed or set()))
            else:
                self.canvas.restore_region(self._background)
                renderer = self.canvas.get_renderer()
                if self._text_renderer._renderer is not renderer:
                    # One wrapper per renderer: matplotlib caches text metrics by renderer.
                    self._text_renderer = _SpriteTextRenderer(renderer)
                for _container, artist in self._foreground:
                    sprites = self.text_sprites and isinstance(artist, Text)
                    artist.draw(self._text_renderer if sprites else renderer)
        except Exception:
            self._background = None  # start afresh on the next frame
            raise
        for container in [self.figure, *self.figure.axes]:
            container.stale = False
        return _rgba_to_png(self.canvas.buffer_rgba(), self.canvas.get_width_height())

    def _changed_artists(self):
        """The stale children of the figure and its Axes, or None if a change is hidden
        deeper (an Axes marked stale without a stale child: new limits, removed artists)."""
        if [ax.get_visible() for ax in self.figure.axes] != self._axes_shown:
            return None  # an Axes shown or hidden: its every artist appears or goes
        changed = set()
        for container in self.figure.axes:
            stale = {child for child in container.get_children() if child.stale}
            if container.stale and not stale:
                return None
            changed |= stale
        figure_children = [child for child in self.figure.get_children()
                           if child not in self.figure.axes]
        changed |= {child for child in figure_children if child.stale}
        if self.figure.stale and not changed and not any(ax.stale for ax in self.figure.axes):
            return None
        return changed

    def _redraw_background(self, dynamic: set):
        """Full draw without the foreground artists, keep it, then draw them on top."""
        self.full_draws += 1
        self._axes_shown = [ax.get_visible() for ax in self.figure.axes]
        self._foreground = self._foreground_order(dynamic)
        hidden = [artist for _container, artist in self._foreground]
        for artist in hidden:
            artist.set_animated(True)  # matplotlib's draw skips animated artists
        try:
            self.canvas.draw()
        finally:
            for artist in hidden:
                artist.set_animated(False)
        self._background = self.canvas.copy_from_bbox(self.figure.bbox)
        for container, artist in self._foreground:
            container.draw_artist(artist)

    def _foreground_order(self, dynamic: set):
        """What each frame redraws: in every Axes (and the figure itself), the changing
        artists and every artist drawn after the lowest of them, in z-order. An Axis
        (ticks and tick labels, outside the data area) stays in the background unless
        it draws a grid. Figure-level changes other than texts and legends (which are
        drawn above the Axes) are not blitted: the whole figure is redrawn each time."""
        order = []
        for container in [*self.figure.axes, self.figure]:
            if not container.get_visible():
                continue  # a hidden Axes draws nothing, its changing artists included
            children = [child for child in container.get_children()
                        if child not in self.figure.axes and child is not self.figure.patch]
            if container is not self.figure:
                children.remove(container.patch)
            children = sorted(children, key=lambda child: child.zorder)
            changing = [child for child in children if child in dynamic]
            if not changing:
                continue
            lowest = min(child.zorder for child in changing)
            for child in children:
                if child in dynamic or (child.zorder >= lowest and _draws_over_data(child)):
                    order.append((container, child))
        if any(container is self.figure and not isinstance(artist, (Text, Legend))
               for container, artist in order) or self.figure.patch in dynamic:
            return []  # nothing to blit: the caller's next frame is a full draw again
        return order


class _SpriteTextRenderer:
    """The Agg renderer, except that plain horizontal text is drawn from a cache.

    Drawing text is most of a frame's cost (FreeType lays out and renders every glyph
    each time), yet an explorer shows the same few strings ("0.25", a title) again and
    again. Each string is rendered once, as a coverage mask at a whole-pixel position,
    and then blended in the text's colour wherever it is drawn: the same glyphs, placed
    to the nearest pixel instead of a fraction of one. Text that is rotated, math, or
    clipped is drawn by Agg as usual.
    """

    MAX_SPRITES = 2000  # a few MB at most

    def __init__(self, renderer):
        self._renderer = renderer
        self._sprites = {}

    def __getattr__(self, name):
        return getattr(self._renderer, name)

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        clipped = gc.get_clip_rectangle() is not None or gc.get_clip_path()[0] is not None
        if ismath or angle % 360 or clipped or not gc.get_antialiased():
            return self._renderer.draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        key = (s, hash(prop), self._renderer.dpi)
        if key not in self._sprites:
            if len(self._sprites) >= self.MAX_SPRITES:
                self._sprites.clear()
            self._sprites[key] = self._render(s, prop)
        coverage, left, top = self._sprites[key]
        rgba = gc.get_rgb()
        alpha = gc.get_alpha() if len(rgba) == 3 or gc.get_forced_alpha() else rgba[3]
        row = round(y) + top  # Agg draws text with y downwards, like the buffer's rows
        column = round(x) + left
        buffer = np.asarray(self._renderer.buffer_rgba())
        height, width = buffer.shape[:2]
        rows = slice(max(row, 0), min(row + coverage.shape[0], height))
        columns = slice(max(column, 0), min(column + coverage.shape[1], width))
        if rows.start >= rows.stop or columns.start >= columns.stop:
            return
        weight = coverage[rows.start - row:rows.stop - row,
                          columns.start - column:columns.stop - column, None] * alpha
        region = buffer[rows, columns, :3]
        colour = np.array(rgba[:3]) * 255
        region[...] = np.round(region * (1 - weight) + colour * weight).astype(np.uint8)

    def _render(self, s, prop):
        """The string as a coverage mask (0 to 1) and the offset of its top-left pixel
        from the text's anchor, drawn once in black on a clear canvas."""
        width, height, descent = self._renderer.get_text_width_height_descent(s, prop, False)
        pad = 4
        scratch = RendererAgg(int(width) + 2 * pad, int(height) + 2 * pad, self._renderer.dpi)
        gc = scratch.new_gc()
        gc.set_foreground((0, 0, 0, 1), isRGBA=True)
        anchor_x, anchor_y = pad, pad + round(height - descent)  # the baseline, from the top
        scratch.draw_text(gc, anchor_x, anchor_y, s, prop, 0)
        gc.restore()
        coverage = np.asarray(scratch.buffer_rgba())[..., 3].astype(np.float32) / 255
        return coverage, -anchor_x, -anchor_y


def _draws_over_data(artist) -> bool:
    if isinstance(artist, Axis):
        return any(line.get_visible() for line in artist.get_gridlines())
    return artist.get_visible()


def _rgba_to_png(buffer, size) -> bytes:
    image = Image.frombuffer("RGBA", size, buffer, "raw", "RGBA", 0, 1).convert("RGB")
    output = io.BytesIO()
    image.save(output, format="png", compress_level=1)
    return output.getvalue()


def figure_to_png(fig, dpi: int = 100) -> bytes:
    """The figure rendered as PNG bytes (what an explorer shows)."""
    buffer = io.BytesIO()
    # Fast compression: an explorer re-renders on every control change.
    fig.savefig(buffer, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buffer.getvalue()
