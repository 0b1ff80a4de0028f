"""FigureRenderer: a figure changed in place, re-rendered as PNG by blitting.

An explorer changes some artists of its figure on each control change (cell colours,
cell values, bar heights, a title) and leaves the rest (tick labels, axis labels,
colour bars, legends) as they are. ``FigureRenderer`` follows matplotlib's own blitting
recipe (https://matplotlib.org/stable/users/explain/animations/blitting.html), with
public API only: the parts that change are *animated* (a full draw skips them), the rest
is drawn once and kept as a background (``canvas.copy_from_bbox``), and each new frame
restores the background (``restore_region``) and draws the changing parts over it
(``draw_artist``).

Which parts change is learnt, not declared: matplotlib marks a changed artist *stale*,
and passes that on to its Axes and figure unless the artist is animated. So after a
control change, a stale figure means something outside the animated parts changed. The
renderer animates what it can learn from that change:

- an Axes whose contents changed (cells, texts, bars, lines, its title) becomes *live*:
  from then on all of its contents are animated and redrawn on every frame, in
  matplotlib's z-order, over a background holding the Axes' face and its axes (ticks,
  tick labels, axis labels), which are not redrawn, nor are the texts above it that have
  not changed (its heading) when nothing redrawn can reach them;
- a figure-level text or legend that changed (a caption) is animated likewise.

What is left in the background then changes only with the figure's *layout*: which Axes
are shown and where, each one's face colour, limits, ticks, tick labels and axis labels,
and what shows of the artists in an Axes that is not live (a legend's entries shown or
hidden, their words). A stale figure means a new layout, or one seen before: the renderer
keeps the backgrounds of the layouts it has drawn (the most recent ones, up to
``background_bytes``), so coming back to a layout (the number of heads shown, a
sequence's labels) restores its background instead of drawing the figure in full. A
stale Axes whose layout is unchanged (something deep inside it changed, a legend entry's
colour, say) becomes live. A figure-level change other than a text or legend (the
figure's face, an image on it) is drawn in full and forgets the kept backgrounds, and so
does every change that makes a new part live, but for the backgrounds in which a newly live
Axes is hidden (the others hold its old contents).

So a frame always shows what a full draw of the figure shows, except that contents
drawn below the axes in z-order (a heatmap's cells) now cover the inner end of a
tick mark or a grid line at the edge of the Axes (a faint pixel at most). A layout is
known by what explorers change of it: a change of an axis's looks alone (its colour, its
font) would not be seen (matplotlib does not even mark an Axes stale when its face
changes colour).
"""

import struct
import zlib

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.legend import Legend
from matplotlib.text import Text

# How much memory an explorer's kept backgrounds may take: an explorer's picture, 850 x 610
# pixels at most, takes about 2 MB as a background, so 8 layouts or more are kept.
BACKGROUND_BYTES = 16_000_000


class FigureRenderer:
    """Renders ``figure`` as PNG after each in-place change, blitting what changed.

    ``png()`` returns the figure as it is now. ``full_draws`` counts the frames that
    needed a full draw and ``layouts_reused`` those that restored a kept background
    instead; ``backgrounds_size()`` is the memory the kept backgrounds take (tests and
    benchmarks read them)."""

    def __init__(self, figure, *, dpi: int = 100, background_bytes: int = BACKGROUND_BYTES):
        self.figure = figure
        figure.set_dpi(dpi)
        self.canvas = FigureCanvasAgg(figure)
        self.live_axes = []  # Axes whose contents are redrawn on every frame
        self.held = set()  # but these texts of theirs, kept in the background (_texts_to_hold)
        self.live_figure_artists = []  # figure-level texts and legends likewise
        self.background = None
        self.drawn = {}  # Axes -> its layout (``_axes_layout``) in the background in use
        self.backgrounds = {}  # layout -> its background, the most recently used last
        self.background_bytes = background_bytes
        self.full_draws = 0
        self.layouts_reused = 0

    def png(self) -> bytes:
        """The figure as it is now, as PNG bytes."""
        try:
            if self.background is None or self.figure.stale:
                described, new_axes, new_artists = self._learn_what_changes()
                if not described or new_artists:
                    self.backgrounds.clear()
                elif new_axes:
                    self._forget_backgrounds_showing(new_axes)
                self._animate()
                layout = self._layout()
                self.drawn = dict(zip(self.figure.axes, layout[1:], strict=True))
                if layout in self.backgrounds:  # a layout seen before: its background
                    self.layouts_reused += 1
                    self.background = self.backgrounds.pop(layout)
                    self.canvas.restore_region(self.background)
                else:
                    self._draw_in_full()
                self._keep(layout, self.background)
            else:
                self.canvas.restore_region(self.background)
            self._draw_animated()
        except Exception:
            self.background = None  # the next picture starts afresh, with a full draw
            self.backgrounds.clear()
            raise
        self._mark_drawn()
        return png_bytes(self.canvas)

    def backgrounds_size(self) -> int:
        """The bytes the kept backgrounds take."""
        width, height = self.canvas.get_width_height()
        return len(self.backgrounds) * width * height * 4  # RGBA, a byte each

    def _learn_what_changes(self) -> tuple:
        """Make live every Axes whose contents changed (not only its axes), and animate
        every figure-level text or legend that changed. Returns whether every change is
        one a layout describes, and the Axes and the figure-level artists that became
        live (the backgrounds drawn before hold them as they were)."""
        if self.background is None:
            return False, [], []  # the first picture, or after an error: nothing known
        axes, figure_artists, described = [], [], True
        for ax in self.figure.axes:
            if not ax.stale:
                continue
            changed = [child for child in ax.get_children() if child.stale]
            for child in changed:
                if child in self.held:  # a heading kept in the background changed
                    self.held.discard(child)
                    described = False
                elif child is not ax.patch and not isinstance(child, Axis):
                    axes.append(ax)  # its face and axes are part of its layout
            if not changed and self.drawn.get(ax) == self._axes_layout(ax):
                # Something deeper inside it changed that its layout does not tell (a
                # legend entry's colour, say): it marked the Axes stale, not its child.
                axes.append(ax)
        for artist in self.figure.get_children():
            if artist.stale and artist not in self.figure.axes:
                if isinstance(artist, (Text, Legend)):
                    figure_artists.append(artist)
                else:
                    described = False  # the figure's face, an image or line on it
        new_axes = list(dict.fromkeys(ax for ax in axes if ax not in self.live_axes))
        new_artists = [artist for artist in figure_artists
                       if artist not in self.live_figure_artists]
        self.live_axes += new_axes
        self.live_figure_artists += new_artists
        for ax in new_axes:
            self.held.update(self._texts_to_hold(ax))
        return described, new_axes, new_artists

    def _forget_backgrounds_showing(self, axes: list):
        """Forget the kept backgrounds in which one of ``axes``, just made live, is shown:
        they hold its old contents. Those in which all of them are hidden hold nothing of
        them (a panel shown only for some settings): they are kept, under the layout they
        have now that these Axes are live (whose contents are not part of it)."""
        position = {ax: index for index, ax in enumerate(self.figure.axes, start=1)}
        kept = {}
        for layout, background in self.backgrounds.items():
            entries = list(layout)
            if len(entries) != len(position) + 1 or any(
                    entries[position[ax]][0] != id(ax) or entries[position[ax]][1]
                    for ax in axes):
                continue  # drawn with other Axes, or showing one of these
            for ax in axes:
                entries[position[ax]] = (*entries[position[ax]][:-1], ())
            kept[tuple(entries)] = background
        self.backgrounds = kept

    def _texts_to_hold(self, ax: Axes) -> list:
        """The texts of an Axes becoming live that can stay in its background: unchanged so
        far and shown wholly outside the Axes (a heading above a panel), while everything
        else in the Axes but its frame and its texts is clipped to it, so that nothing
        redrawn can reach them (texts do not overlap: ``tests/widgets/test_figure_layout.py``
        checks every explorer for it). Drawing text is most of what a frame costs. A held
        text that changes is redrawn on every frame from then on."""
        contents = _contents(ax)
        frame = set(ax.spines.values())
        renderer = self.canvas.get_renderer()
        # The frame's line, half of it outside the Axes, and a pixel of anti-aliasing.
        line = max([spine.get_linewidth() for spine in frame], default=0)
        around = ax.bbox.padded(line * self.figure.dpi / 72 / 2 + 1)
        held = [artist for artist in contents
                if isinstance(artist, Text) and not artist.stale and artist.get_visible()
                and artist.get_text() and not artist.get_window_extent(renderer).overlaps(around)]
        others = [artist for artist in contents
                  if not isinstance(artist, Text) and artist not in frame]
        if not all(_clipped_to(artist, ax) for artist in others):
            return []
        return held

    def _layout(self) -> tuple:
        """What the background shows, as a key: the figure's artists; for each Axes whether
        it is shown, where (as placed, before its aspect is applied: asking for the position
        it is drawn at would apply it, before the figure's layout is made), its limits, its
        axes (ticks, tick labels, axis labels) if it draws them (asking an axis that is not
        drawn for its tick labels would make some), and, unless it is live, what shows of
        the artists in it."""
        return (tuple(map(id, self.figure.get_children())),
                *map(self._axes_layout, self.figure.axes))

    def _axes_layout(self, ax: Axes) -> tuple:
        return (id(ax), ax.get_visible(), tuple(ax.get_position(original=True).bounds),
                ax.patch.get_visible(), ax.patch.get_facecolor(), ax.get_xlim(), ax.get_ylim(),
                ax.axison and (_axis_layout(ax.xaxis), _axis_layout(ax.yaxis)),
                () if ax in self.live_axes else _shown_contents(ax))

    def _keep(self, layout, background):
        """Keep ``background`` as the most recently used, forgetting the least recently
        used ones beyond ``background_bytes`` (the one in use is always kept)."""
        self.backgrounds[layout] = background
        while len(self.backgrounds) > 1 and self.backgrounds_size() > self.background_bytes:
            del self.backgrounds[next(iter(self.backgrounds))]

    def _animate(self):
        """Mark the live parts animated: a full draw skips them, and a change of them no
        longer marks the figure stale."""
        for artist in self._animated_artists():
            for part in artist.findobj():  # its parts too (a legend's texts)
                part.set_animated(True)

    def _draw_in_full(self):
        """Draw everything but the animated parts, keep that as the background."""
        self.full_draws += 1
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.figure.bbox)

    def _animated_artists(self) -> list:
        """The animated parts, in the order a full draw would draw them."""
        artists = []
        for ax in self.live_axes:
            if ax.get_visible():
                artists += sorted((artist for artist in _contents(ax) if artist not in self.held),
                                  key=lambda artist: artist.get_zorder())
        return artists + sorted(self.live_figure_artists, key=lambda artist: artist.get_zorder())

    def _draw_animated(self):
        for artist in self._animated_artists():
            self.figure.draw_artist(artist)

    def _mark_drawn(self):
        """Clear the stale flags that the next frame reads: the picture shows everything
        as it is now. (An artist that draws nothing, such as an empty text, stays stale
        after a draw; drawing a legend marks its Axes stale.) Clearing a flag tells no one."""
        for container in [self.figure, *self.figure.axes]:
            for child in container.get_children():
                child.stale = False
            container.stale = False


def _contents(ax: Axes) -> list:
    """What an Axes draws inside its frame and above it: every child but its face and its
    axes (x and y: ticks, tick labels, axis label), which a frame keeps from the background,
    and but its frame (spines) when it draws none (``set_axis_off``, ``set_frame_on``)."""
    hidden = [ax.patch, *([] if ax.axison and ax.get_frame_on() else ax.spines.values())]
    return [child for child in ax.get_children()
            if not isinstance(child, Axis) and not any(child is part for part in hidden)]


def _clipped_to(artist, ax: Axes) -> bool:
    """Whether nothing of the artist is drawn outside the Axes."""
    box = artist.get_clip_box()
    return (not artist.get_visible()
            or (artist.get_clip_on() and box is not None
                and ax.bbox.padded(1).contains(box.x0, box.y0)
                and ax.bbox.padded(1).contains(box.x1, box.y1)))


def _shown_contents(ax: Axes) -> tuple:
    """What shows of the artists in an Axes: each one and its parts (a legend's entries),
    whether it is shown, and a text's words."""
    return tuple((id(part), part.get_visible(),
                  part.get_text() if isinstance(part, Text) else None)
                 for child in _contents(ax) for part in child.findobj())


def _axis_layout(axis: Axis) -> tuple:
    """What an axis shows: its major ticks, their labels (text, angle, alignment) and the
    axis's label."""
    return (axis.get_visible(), tuple(axis.get_ticklocs()),
            tuple((label.get_text(), label.get_rotation(), label.get_horizontalalignment(),
                   label.get_visible()) for label in axis.get_ticklabels()),
            axis.label.get_text(), axis.label.get_visible())


def png_bytes(canvas) -> bytes:
    """What an Agg canvas shows, as an RGB PNG: rows unfiltered, deflated at level 1 (an
    explorer sends one on every control change)."""
    # Why not Pillow (Image.frombuffer(...).convert("RGB").save(buffer, "png",
    # compress_level=1), its quickest public route): it spends most of its time choosing a
    # filter for each row (compress_level=0 saves little), of little use on flat-coloured
    # plots, and has no option to skip that. Measured on every explorer's frames, 850 px
    # wide and 330 to 610 tall, both encoders on the same frames in one run:
    #     .venv/bin/python benchmarks/widget_latency.py --encoders
    # 2-core AMD EPYC, Pillow 13.0.0, 2026-11-25 (benchmarks/README.md has the table): ours
    # 3.6 to 7.8 ms a frame, Pillow 10.3 to 27.4 ms (medians), so 6.5 to 19.6 ms saved on
    # every control change. In the browser a move takes 59 to 129 ms to its picture, of
    # which 31 ms is the widgets' round trip alone (the floor): the saving is a tenth to a
    # fifth of what a learner waits. The PNGs are as large as Pillow's within 5 %, except
    # the heads explorer's (62 KB against 54).
    width, height = canvas.get_width_height()
    pixels = np.asarray(canvas.buffer_rgba())
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0  # each row's filter type: none
    rgb = rows[:, 1:].reshape(height, width, 3)
    for channel in range(3):  # one channel at a time: several times quicker than [..., :3]
        rgb[..., channel] = pixels[..., channel]
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"".join([PNG_SIGNATURE, png_chunk(b"IHDR", header),
                     png_chunk(b"IDAT", zlib.compress(rows, 1)), png_chunk(b"IEND", b"")])


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data)))
