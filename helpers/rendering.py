"""FigureRenderer: a figure changed in place, re-rendered as PNG by blitting.

An explorer changes a few artists of its figure on each control change (cell colours,
cell values, bar heights, a title) and leaves the rest (tick labels, axis labels, colour
bars, legends) as they are. ``FigureRenderer`` follows matplotlib's blitting recipe
(https://matplotlib.org/stable/users/explain/animations/blitting.html): the caller names
the artists that change, which are set *animated* (a full draw skips them); the rest is
drawn once and kept as the background (``canvas.copy_from_bbox``); each frame restores
the background (``restore_region``) and draws the animated artists over it
(``draw_artist``), in the order a full draw would.

The caller also names the figure's *layout*: any value that changes when something in
the background changes (the tick labels of a new sequence, a panel shown or hidden).
A new layout, or an artist animated for the first time, is drawn in full again, and
its background kept in place of the last one.
"""

import struct
import zlib

import numpy as np
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.backends.backend_agg import FigureCanvasAgg


class FigureRenderer:
    """Renders ``figure`` as PNG after each in-place change, blitting what changed."""

    def __init__(self, figure, *, dpi: int = 100):
        self.figure = figure
        figure.set_dpi(dpi)
        # The figure's own canvas if it draws pixels (helpers.plotting.new_figure's does):
        # a second canvas would hold a second copy of them.
        if not isinstance(figure.canvas, FigureCanvasAgg):
            FigureCanvasAgg(figure)  # made the figure's canvas
        self.canvas = figure.canvas
        self.background = None  # the figure drawn without its animated artists
        self.layout = None  # what the background shows, as the caller names it

    def png(self, animated, layout=None) -> bytes:
        """The figure as it is now, as PNG bytes. ``animated``: the artists that may have
        changed since the last frame, and any drawn over them; ``layout``: a value that
        changes whenever anything else in the figure does (compared with ``==``)."""
        newly_animated = [artist for artist in animated if not artist.get_animated()]
        for artist in newly_animated:
            artist.set_animated(True)  # the background drawn before holds it: draw anew
        try:
            if self.background is None or newly_animated or layout != self.layout:
                self.canvas.draw()  # everything but the animated artists
                self.background = self.canvas.copy_from_bbox(self.figure.bbox)
                self.layout = layout
            else:
                self.canvas.restore_region(self.background)
            for artist in drawing_order(animated):
                if artist.axes is None or artist.axes.get_visible():  # as a full draw
                    self.figure.draw_artist(artist)
        except Exception:
            self.background = None  # the next frame starts afresh, with a full draw
            raise
        return png_bytes(self.canvas)

    def close(self):
        """Render no more, and free the pixels now (1 to 2 MB, and the background's as
        much), not at Python's next full garbage collection: the figure and its canvas
        refer to each other, so the figure gets a canvas without pixels."""
        FigureCanvasBase(self.figure)
        self.canvas = self.background = None


def drawing_order(artists) -> list:
    """The artists in the order a full draw draws them: those in an Axes first, then the
    figure's own (a caption, a legend: above the Axes); each by zorder, and those of one
    zorder in the order they were added (their place among their parent's children)."""
    def order(artist):
        parent = artist.figure if artist.axes is None else artist.axes
        return artist.axes is None, artist.get_zorder(), parent.get_children().index(artist)

    return sorted(artists, key=order)


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
