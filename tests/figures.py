"""What tests read of a matplotlib figure: its PNG, its pixels as a full draw makes them,
its cell labels. Found through matplotlib's public API (``findobj``, an artist's gid), so
that the helpers keep no bookkeeping for tests."""

import io

import numpy as np
from PIL import Image

from helpers.plotting import CELL_LABELS_GID


def figure_to_png(figure, dpi: int = 100) -> bytes:
    """The figure saved as PNG bytes, as matplotlib saves it."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buffer.getvalue()


def pixels(png: bytes) -> np.ndarray:
    """(height, width, 3) RGB values of a PNG, as ints."""
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def full_draw(figure) -> np.ndarray:
    """The figure drawn by matplotlib alone, animated artists included."""
    animated = [artist for artist in figure.findobj() if artist.get_animated()]
    for artist in animated:
        artist.set_animated(False)
    try:
        figure.canvas.draw()
        return np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(int)
    finally:
        for artist in animated:
            artist.set_animated(True)


def near_axes_edges(figure) -> np.ndarray:
    """Pixels within one pixel of an Axes' frame (rows from the top, as in a PNG): where a
    frame may differ from a full draw (cells redrawn over the inner end of a tick mark)."""
    width, height = figure.canvas.get_width_height()
    near = np.zeros((height, width), dtype=bool)
    for ax in figure.axes:
        x0, y0, x1, y1 = ax.get_window_extent().extents
        top, bottom = height - y1, height - y0
        for row in (top, bottom):
            near[max(round(row) - 1, 0):round(row) + 2, max(int(x0) - 1, 0):int(x1) + 2] = True
        for column in (x0, x1):
            near[max(int(top) - 1, 0):int(bottom) + 2,
                 max(round(column) - 1, 0):round(column) + 2] = True
    return near


def assert_shows_a_full_draw(png: bytes, figure, context=""):
    """The PNG (a rendered frame) is what a full draw of the figure shows, but for faint
    pixels at the Axes' frames."""
    difference = np.abs(pixels(png) - full_draw(figure)).max(axis=-1)
    assert not (difference.astype(bool) & ~near_axes_edges(figure)).any(), context
    assert difference.max() <= 16, context  # faint where allowed


def shown_cell_labels(figure) -> list:
    """The collections of cell labels (``helpers.plotting.CellLabels``) that the figure
    shows: found by their gid, visible, in a visible Axes (or none)."""
    return figure.findobj(lambda artist: artist.get_gid() == CELL_LABELS_GID
                          and artist.get_visible()
                          and (artist.axes is None or artist.axes.get_visible()))


def cell_label_size(collection) -> float:
    """The size in points of a collection of cell labels: drawn as markers are, their
    size is in points squared (``get_sizes``)."""
    return float(np.sqrt(collection.get_sizes()).min())


def cell_labels_written(collection) -> int:
    """How many cells of a collection of cell labels show some text (an empty cell's
    outline has no vertices)."""
    return sum(len(path.vertices) > 0 for path in collection.get_paths())
