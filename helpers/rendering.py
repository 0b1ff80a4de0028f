"""FigureRenderer: a figure changed in place, re-rendered as PNG by redrawing what changed.

An explorer changes a few artists of its figure on each control change (an image's data,
some texts, bar heights) and leaves the rest (tick labels, axis labels, legends) alone,
yet a full draw spends most of its time on that unchanged rest. ``FigureRenderer`` draws
the rest once as a background and, for each new frame, restores it and draws only the
changing artists over it; see the class for the rules that keep a frame equal to a full
draw of the figure.
"""

import math
import struct
import zlib

import numpy as np
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg, get_hinting_flag
from matplotlib.colors import to_rgba
from matplotlib.ft2font import RenderMode
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from matplotlib.legend import Legend
from matplotlib.text import Text

# Extents are widened by this much (in inches) before testing for overlap: antialiased
# edges and line widths reach a little beyond an artist's extent.
OVERLAP_MARGIN = 0.05


class FigureRenderer:
    """Re-renders a figure as PNG after in-place changes, redrawing only what changed.

    The renderer learns which artists change (matplotlib marks a changed artist *stale*),
    draws everything else once as a background, and for each new frame restores the
    background and draws only the changed artists, plus whatever is drawn over them in
    the same Axes (spines, lines, legends), in matplotlib's own z-order. An artist drawn
    above a changing one but apart from it (a legend below an Axes, a figure legend
    under a changing title) stays in the background: their extents do not overlap. A
    changing artist that is not clipped to its Axes (a text) is checked on every frame,
    and if it has grown over such an artist, the frame is drawn in full instead.
    Anything else it cannot explain (a new or removed artist, new axis limits, a changed
    size, an Axes shown or hidden) also triggers a full draw and a new background, so a
    frame always equals a full draw of the figure. So does a change to an Axis (its ticks
    or tick labels), which is never redrawn on its own: drawing one costs 5 to 10 ms.

    Text, in frames and full draws alike, comes from a cache of rendered strings (see
    ``_SpriteTextRenderer``; ``text_sprites=False`` turns it off). The PNG is encoded
    from the Agg buffer as RGB with fast compression.

    One known difference from a full draw: the antialiased end of a tick mark, kept in
    the background, can reach a pixel into the data area, and a frame that redraws an
    image there paints over it (at most a faint pixel per tick, at the Axes' edge).
    """

    def __init__(self, figure, *, dpi: int = 100, text_sprites: bool = True):
        self.figure = figure
        self.text_sprites = text_sprites
        figure.set_dpi(dpi)
        self.canvas = FigureCanvasAgg(figure)
        self._foreground = []  # [(container, artist)], drawn in this order on each frame
        # [(artist, extents)]: changing artists not clipped to their Axes, and the extents
        # of the artists above them left in the background, which they must not reach.
        self._watched = []
        self._background = None
        self._text_renderer = _SpriteTextRenderer(None)
        self._axes_shown = None  # which Axes were visible when the background was drawn
        self._looks = {}  # legend or Axis: what its parts showed on the last frame
        self.full_draws = 0  # how many frames needed a full draw (a test looks)

    def png(self) -> bytes:
        """The figure as it is now, as PNG bytes."""
        changed = self._changed_artists()
        drawn = {artist for _container, artist in self._foreground}
        try:
            if self._background is None:
                self._redraw_background(set())  # nothing is known to change yet
            elif changed is None or not changed <= drawn:
                # An Axis (ticks, tick labels, axis label) costs more to draw than most
                # figures' changing parts together, and changes rarely (a new token list):
                # a frame where one changes is drawn in full, and it stays background.
                self._redraw_background(drawn | {artist for artist in changed or ()
                                                 if not isinstance(artist, Axis)})
            else:
                self._draw_frame()
                if self._reaches_background_artist():
                    self._redraw_background(drawn)
        except Exception:
            self._background = None  # start afresh on the next frame
            raise
        self._mark_up_to_date()
        return _rgba_to_png(self.canvas.buffer_rgba(), self.canvas.get_width_height())

    def _draw_frame(self):
        self.canvas.restore_region(self._background)
        self._draw_foreground(self._drawing_renderer())

    def _drawing_renderer(self):
        """The canvas's Agg renderer, wrapped to draw text from cached sprites."""
        renderer = self.canvas.get_renderer()
        if not self.text_sprites:
            return renderer
        if self._text_renderer._renderer is not renderer:
            # One wrapper per renderer: matplotlib caches text metrics by renderer.
            self._text_renderer = _SpriteTextRenderer(renderer)
        return self._text_renderer

    def _draw_foreground(self, renderer):
        for _container, artist in self._foreground:
            if not (self.text_sprites and renderer.draw_plain_text(artist)):
                artist.draw(renderer)

    def _changed_artists(self):
        """The stale children of the figure and its Axes, or None if a change is hidden
        deeper (an Axes marked stale without a stale child: new limits, removed artists)."""
        if [ax.get_visible() for ax in self.figure.axes] != self._axes_shown:
            return None  # an Axes shown or hidden: its every artist appears or goes
        changed = set()
        for container in self.figure.axes:
            if not container.get_visible():
                continue  # draws nothing, whatever changed in it
            stale = {child for child in container.get_children() if self._is_changed(child)}
            if container.stale and not stale:
                return None
            changed |= stale
        figure_children = [child for child in self.figure.get_children()
                           if child not in self.figure.axes]
        changed |= {child for child in figure_children if self._is_changed(child)}
        if self.figure.stale and not changed and not any(ax.stale for ax in self.figure.axes):
            return None
        return changed

    def _is_changed(self, artist) -> bool:
        if artist.stale:
            return True
        looks = self._looks.get(artist)
        return looks is not None and looks != _looks(artist)

    def _mark_up_to_date(self):
        """Clear every stale flag the next frame looks at, and note what legends and
        Axis show. Matplotlib clears an artist's flag when it draws it, but an artist
        that draws nothing (an empty text, a hidden artist) keeps it, and would look
        changed on every frame."""
        self._looks = {}
        for container in [self.figure, *self.figure.axes]:
            for child in container.get_children():
                child.stale = False
                if isinstance(child, (Legend, Axis)):
                    self._looks[child] = _looks(child)
            container.stale = False

    def _redraw_background(self, dynamic: set):
        """Full draw without the foreground artists, keep it, then draw them on top."""
        self.full_draws += 1
        self._axes_shown = [ax.get_visible() for ax in self.figure.axes]
        self._foreground, self._watched = self._foreground_order(dynamic)
        hidden = [artist for _container, artist in self._foreground]
        for artist in hidden:
            artist.set_animated(True)  # matplotlib's draw skips animated artists
        renderer = self._drawing_renderer()
        try:
            renderer.clear()
            self.figure.draw(renderer)  # what canvas.draw() does, with cached text
        finally:
            for artist in hidden:
                artist.set_animated(False)
        self._background = self.canvas.copy_from_bbox(self.figure.bbox)
        self._draw_foreground(renderer)

    def _foreground_order(self, dynamic: set):
        """What each frame redraws: in every Axes (and the figure itself), the changing
        artists and every artist drawn after the lowest of them, in z-order, except texts
        and legends that no changing artist can reach. An Axis (ticks and tick labels,
        outside the data area) stays in the background unless it draws a grid. Figure-level
        changes other than texts and legends (which are drawn above the Axes) are not
        blitted: the whole figure is redrawn each time. Returns the order and the watched
        artists (see ``__init__``)."""
        order, watched = [], []
        # Extents are measured before the background is drawn: only valid if that draw
        # does not lay the figure out anew.
        engine = self.figure.get_layout_engine()
        may_keep = engine is None or isinstance(engine, PlaceHolderLayoutEngine)
        renderer = self.canvas.get_renderer()
        margin = OVERLAP_MARGIN * self.figure.dpi
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
            above = [child for child in children if child not in dynamic
                     and child.zorder >= lowest and _draws_over_data(child)]
            kept = {}  # artist above a changing one, left in the background: its extent
            reaches = [_reach(child, renderer, margin) for child in changing] \
                if may_keep and any(isinstance(child, (Text, Legend)) for child in above) \
                else [None]
            if all(reach is not None for reach in reaches):
                for child in above:
                    if isinstance(child, (Text, Legend)):  # extents that hold what they draw
                        extent = child.get_window_extent(renderer).padded(margin)
                        if not any(extent.overlaps(reach) for reach, _fixed in reaches):
                            kept[child] = extent
            if kept:
                watched += [(child, list(kept.values()))
                            for child, (_reach_now, fixed) in zip(changing, reaches, strict=True)
                            if not fixed]
            order += [(container, child) for child in children
                      if child in dynamic or (child in above and child not in kept)]
        if any(container is self.figure and not isinstance(artist, (Text, Legend))
               for container, artist in order) or self.figure.patch in dynamic:
            return [], []  # nothing to blit: the caller's next frame is a full draw again
        return order, watched

    def _reaches_background_artist(self) -> bool:
        """Whether a watched artist now overlaps an artist left in the background."""
        if not self._watched:
            return False
        renderer = self.canvas.get_renderer()
        margin = OVERLAP_MARGIN * self.figure.dpi
        for artist, extents in self._watched:
            if not artist.get_visible() or (isinstance(artist, Text) and not artist.get_text()):
                continue
            reach = artist.get_window_extent(renderer).padded(margin)
            if any(reach.overlaps(extent) for extent in extents):
                return True
        return False


def _parts(artist) -> list:
    """The parts of a legend (texts, handles) or an Axis (label, tick labels), which can
    change without marking it stale; no parts for other artists."""
    if isinstance(artist, Legend):
        return [*artist.get_texts(), *artist.legend_handles]
    if isinstance(artist, Axis):  # its texts: tick_params and grid mark the Axis stale
        ticks = [*artist.majorTicks, *artist.minorTicks]
        return [artist.label, artist.offsetText,
                *(label for tick in ticks for label in (tick.label1, tick.label2))]
    return []


def _looks(artist):
    """What the parts of a legend or an Axis show: compared between frames instead of
    their stale flags, which every draw of an Axis sets again (a draw outside the
    renderer, e.g. a notebook showing the figure, would look like a change)."""
    return tuple((part.get_visible(), part.get_text() if isinstance(part, Text) else None,
                  str(part.get_color()) if hasattr(part, "get_color") else None)
                 for part in _parts(artist))


def _reach(artist, renderer, margin):
    """Where a changing artist can draw, as (extent, fixed), or None if unknown. Fixed:
    the artist is clipped to a box (its Axes); otherwise (a text) the extent is where it
    is now, and moves with its text and position."""
    clip_box = artist.get_clip_box()
    if artist.get_clip_on() and clip_box is not None and artist.get_clip_path() is None:
        return clip_box.frozen().padded(margin), True
    if isinstance(artist, Text) and artist.get_bbox_patch() is None:
        return artist.get_window_extent(renderer).padded(margin), False
    return None


class _SpriteTextRenderer:
    """The Agg renderer, except that plain text is drawn from a cache.

    Drawing text is most of a frame's cost (FreeType lays out and renders every glyph
    each time), yet an explorer shows the same few strings ("0.25", a title, tick labels)
    again and again. Each string is rendered once per angle, as a coverage mask at a
    whole-pixel position, and then blended in the text's colour wherever it is drawn:
    the same glyphs, placed to the nearest pixel instead of a fraction of one. A string
    not seen before (a title with a new number) is made from kept glyph rasters, so it
    costs its layout: with matplotlib 3.11, Agg rasterises glyph by glyph in Python, 12 ms
    for a caption of 110 characters. Text that is math or clipped is drawn by Agg as
    usual. Everything else is passed to Agg.
    """

    MAX_SPRITES = 2000  # a few MB at most

    def __init__(self, renderer):
        self._renderer = renderer
        self._sprites = {}
        self._layouts = {}  # text key: [(line, ismath, dx, dy)], see draw_plain_text

    def __getattr__(self, name):
        return getattr(self._renderer, name)

    def draw_plain_text(self, text) -> bool:
        """Draw a plain ``Text`` artist (one font, no box, no clipping, no math) from
        cached sprites, skipping matplotlib's layout of it, which costs more than drawing
        it: the layout (where each line starts, relative to the text's anchor) depends
        only on the text's string, font and alignment, and is kept per such key. Returns
        False, drawing nothing, for any other artist or text."""
        if type(text) is not Text or not text.get_visible():
            return type(text) is Text and not text.get_visible()
        if not text.get_text():
            return True
        clipped = text.get_clip_on() and (text.get_clip_box() is not None
                                          or text.get_clip_path() is not None)
        if (clipped or text.get_bbox_patch() is not None or text.get_path_effects()
                or text.get_usetex() or text.get_wrap() or text.get_transform_rotates_text()
                or not text.get_antialiased()):
            return False
        prop = text.get_fontproperties()
        angle = text.get_rotation()
        key = (text.get_text(), hash(prop), self._renderer.dpi, angle, text.get_rotation_mode(),
               text.get_horizontalalignment(), text.get_verticalalignment(),
               text._get_multialignment(), text.get_linespacing())
        lines = self._layouts.get(key)
        if lines is None:
            _bbox, info, _corner = text._get_layout(self._renderer)
            lines = [(*text._preprocess_math(line), dx, dy) for line, _size, (dx, dy) in info]
            if any(ismath for _line, ismath, _dx, _dy in lines):
                return False
            if len(self._layouts) >= self.MAX_SPRITES:
                self._layouts.clear()
            self._layouts[key] = lines
        x, y = text.get_transform().transform(text.get_unitless_position())
        if not (np.isfinite(x) and np.isfinite(y)):
            return True  # matplotlib draws nothing either
        rgba = to_rgba(text.get_color(), text.get_alpha())
        height = self._renderer.height
        for line, _ismath, dx, dy in lines:
            self._blend(line, prop, angle, x + dx, height - (y + dy), rgba)
        text.stale = False
        return True

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        clipped = gc.get_clip_rectangle() is not None or gc.get_clip_path()[0] is not None
        if ismath or clipped or not gc.get_antialiased():
            return self._renderer.draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        rgba = gc.get_rgb()
        alpha = gc.get_alpha() if len(rgba) == 3 or gc.get_forced_alpha() else rgba[3]
        self._blend(s, prop, angle, x, y, (*rgba[:3], alpha))

    def _blend(self, s, prop, angle, x, y, rgba):
        """The string's sprite blended in colour ``rgba`` at (x, y), y downwards; a new
        string's sprite is made first."""
        key = (s, hash(prop), self._renderer.dpi, angle % 360)
        if key not in self._sprites:
            if len(self._sprites) >= self.MAX_SPRITES:
                self._sprites.clear()
            self._sprites[key] = self._render(s, prop, angle % 360)
        coverage, left, top = self._sprites[key]
        row = round(y) + top  # Agg draws text with y downwards, like the buffer's rows
        column = round(x) + left
        buffer = np.asarray(self._renderer.buffer_rgba())
        height, width = buffer.shape[:2]
        rows = slice(max(row, 0), min(row + coverage.shape[0], height))
        columns = slice(max(column, 0), min(column + coverage.shape[1], width))
        if rows.start >= rows.stop or columns.start >= columns.stop:
            return
        weight = coverage[rows.start - row:rows.stop - row,
                          columns.start - column:columns.stop - column]
        if rgba[3] != 1:
            weight = weight * np.float32(rgba[3])
        region = buffer[rows, columns, :3]
        blended = region.astype(np.float32)
        blended += (np.array(rgba[:3], dtype=np.float32) * 255 - blended) * weight
        blended += 0.5  # round to the nearest level, as the cast truncates
        region[...] = blended

    def _render(self, s, prop, angle):
        """The string as a coverage mask (0 to 1), cropped to its ink, and the offset of
        its top-left pixel from the text's anchor: what Agg draws in black on a clear
        canvas. Drawn as Agg draws it (matplotlib's layout of the string, then each glyph
        rasterised by FreeType at its sub-pixel position and laid over the others), except
        that each glyph's raster is kept (``_glyph_raster``), so a new string costs its
        layout rather than the rasterising of every glyph in it, several times more."""
        font = self._renderer._prepare_font(prop)
        size = prop.get_size_in_points()
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        rasters = []
        for item in font._layout(s, flags=get_hinting_flag()):
            # The glyph's origin, in 1/64 pixel with y upwards (FreeType's), as Agg
            # computes it for an anchor at (0, 0); a raster moved by whole pixels is
            # the same raster.
            x64 = round(0x40 * (item.x * cos - item.y * sin))
            y64 = round(0x40 * (item.x * sin + item.y * cos))
            coverage, left, top = _glyph_raster(item.ft_object, size, self._renderer.dpi,
                                                item.glyph_index, angle, x64 % 64, y64 % 64)
            if coverage.size:
                # Rows downwards: the raster's top row is `top` pixels above the anchor.
                rasters.append((coverage, left + x64 // 64, -(top + y64 // 64)))
        if not rasters:  # blank (spaces only)
            return np.zeros((0, 0, 1), np.float32), 0, 0
        left = min(column for _coverage, column, _row in rasters)
        top = min(row for _coverage, _column, row in rasters)
        right = max(column + coverage.shape[1] for coverage, column, _row in rasters)
        bottom = max(row + coverage.shape[0] for coverage, _column, row in rasters)
        # Glyphs that touch are laid over each other as Agg does: coverage a over b
        # gives a + b (1 - a).
        clear = np.ones((bottom - top, right - left), np.float32)
        for coverage, column, row in rasters:
            part = clear[row - top:row - top + coverage.shape[0],
                         column - left:column - left + coverage.shape[1]]
            part *= 1 - coverage
        ink = 1 - clear
        ink_rows, ink_columns = np.nonzero(ink > 0)
        if not len(ink_rows):
            return np.zeros((0, 0, 1), np.float32), 0, 0
        top_ink, left_ink = ink_rows.min(), ink_columns.min()
        ink = ink[top_ink:ink_rows.max() + 1, left_ink:ink_columns.max() + 1]
        return ink[..., None], left + left_ink, top + top_ink


_GLYPH_RASTERS = {}  # see _glyph_raster
MAX_GLYPH_RASTERS = 20000  # glyphs of a few pixels each: a few MB at most


def _glyph_raster(font, size, dpi, glyph_index, angle, x64, y64):
    """One glyph rasterised by FreeType as Agg's draw_text does it, rotated by ``angle``
    degrees with its origin at (x64, y64) / 64 pixels (y upwards), antialiased: its
    coverage (0 to 1) and the column and row (y upwards) of its top-left pixel. Kept per
    font, size, dpi, glyph, angle and sub-pixel origin."""
    key = (font.fname, font.face_index, size, dpi, glyph_index, angle, x64, y64)
    raster = _GLYPH_RASTERS.get(key)
    if raster is None:
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        font.set_size(size, dpi)
        font._set_transform((0x10000 * np.array([[cos, -sin], [sin, cos]])).round().astype(int),
                            [x64, y64])
        bitmap = font._render_glyph(glyph_index, get_hinting_flag(), RenderMode.NORMAL)
        coverage = np.asarray(bitmap.buffer, dtype=np.float32) / 255
        if len(_GLYPH_RASTERS) >= MAX_GLYPH_RASTERS:
            _GLYPH_RASTERS.clear()
        raster = _GLYPH_RASTERS[key] = (coverage, bitmap.left, bitmap.top)
    return raster


def _draws_over_data(artist) -> bool:
    if isinstance(artist, Axis):
        return any(line.get_visible() for line in artist.get_gridlines())
    return artist.get_visible()


def _rgba_to_png(buffer, size) -> bytes:
    """An RGBA buffer as an RGB PNG, written directly: rows unfiltered, deflated at
    level 1. About a third quicker than PIL's encoder, whose per-row filter choice buys
    little on flat-coloured plots."""
    width, height = size
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0  # filter type of each row: none
    pixels, rgb = np.asarray(buffer), rows[:, 1:].reshape(height, width, 3)
    for channel in range(3):  # one channel at a time: several times quicker than [..., :3]
        rgb[..., channel] = pixels[..., channel]
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"".join([_PNG_SIGNATURE, _png_chunk(b"IHDR", header),
                     _png_chunk(b"IDAT", zlib.compress(rows, 1)), _png_chunk(b"IEND", b"")])


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data)))
