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
control change, a stale figure means something outside the animated parts changed, and
the renderer draws the figure in full. It animates what it can learn from that change:

- an Axes whose contents changed (cells, texts, bars, lines, its title) becomes *live*:
  from then on all of its contents are animated and redrawn on every frame, in
  matplotlib's z-order, over a background holding the Axes' face and its axes (ticks,
  tick labels, axis labels), which are not redrawn;
- a figure-level text or legend that changed (a caption) is animated likewise;
- anything else (new tick labels, new axis limits, an Axes shown or hidden, an artist
  added or removed) is simply drawn in full, as it is, and so is whatever changed with
  it: the renderer learns only from changes that blitting alone could show.

So a frame always shows what a full draw of the figure shows, except that contents
drawn below the axes in z-order (a heatmap's cells) now cover the inner end of a
tick mark or a grid line at the edge of the Axes (a faint pixel at most).
"""

import struct
import zlib

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.legend import Legend
from matplotlib.text import Text


class FigureRenderer:
    """Renders ``figure`` as PNG after each in-place change, blitting what changed.

    ``png()`` returns the figure as it is now. ``full_draws`` counts the frames that
    needed a full draw (tests and benchmarks read it)."""

    def __init__(self, figure, *, dpi: int = 100):
        self.figure = figure
        figure.set_dpi(dpi)
        self.canvas = FigureCanvasAgg(figure)
        self.live_axes = []  # Axes whose contents are redrawn on every frame
        self.live_figure_artists = []  # figure-level texts and legends likewise
        self.background = None
        self.full_draws = 0

    def png(self) -> bytes:
        """The figure as it is now, as PNG bytes."""
        try:
            if self.background is None or self.figure.stale:
                self._learn_what_changes()
                self._draw_in_full()
            else:
                self.canvas.restore_region(self.background)
            self._draw_animated()
        except Exception:
            self.background = None  # the next picture starts afresh, with a full draw
            raise
        self._mark_drawn()
        return png_bytes(self.canvas)

    def _learn_what_changes(self):
        """Make live every Axes whose changed children are all contents (not an Axis), and
        animate every figure-level text or legend that changed; but only when every change
        could have been blitted. A change that needs a full draw anyway (new tick labels,
        an Axes shown) is drawn in full with whatever changed alongside it, which stays in
        the background: a heading that changes only with such a control costs no frame."""
        if self.background is None:
            return  # the first picture: nothing is known to change yet
        axes, figure_artists = [], []
        for ax in self.figure.axes:
            if not ax.stale:
                continue
            changed = [child for child in ax.get_children() if child.stale]
            if not changed or any(isinstance(child, Axis) for child in changed):
                return  # new limits, ticks or tick labels, an Axes shown or hidden
            axes.append(ax)
        for artist in self.figure.get_children():
            if artist.stale and artist not in self.figure.axes:
                if not isinstance(artist, (Text, Legend)):
                    return
                figure_artists.append(artist)
        self.live_axes += [ax for ax in axes if ax not in self.live_axes]
        self.live_figure_artists += [artist for artist in figure_artists
                                     if artist not in self.live_figure_artists]

    def _draw_in_full(self):
        """Draw everything but the animated parts, keep that as the background."""
        self.full_draws += 1
        for artist in self._animated_artists():
            for part in artist.findobj():  # its parts too (a legend's texts)
                part.set_animated(True)  # a full draw skips it; a change of it no longer
                # marks the figure stale
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.figure.bbox)

    def _animated_artists(self) -> list:
        """The animated parts, in the order a full draw would draw them."""
        artists = []
        for ax in self.live_axes:
            if ax.get_visible():
                artists += sorted(_contents(ax), key=lambda artist: artist.get_zorder())
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
    axes (x and y: ticks, tick labels, axis label), which a frame keeps from the background."""
    return [child for child in ax.get_children()
            if child is not ax.patch and not isinstance(child, Axis)]


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
