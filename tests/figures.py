"""What tests read of a matplotlib figure: its PNG, its pixels as a full draw makes them,
its cell labels. Found through matplotlib's public API (``findobj``, an artist's gid), so
that the helpers keep no bookkeeping for tests."""

import io
from itertools import combinations

import numpy as np
from matplotlib.legend import Legend
from matplotlib.text import Text
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


def assert_shows_a_full_draw(png: bytes, figure, context=""):
    """The PNG (a rendered frame) is what a full draw of the figure shows, every pixel."""
    difference = np.abs(pixels(png) - full_draw(figure)).max(axis=-1)
    differ = np.argwhere(difference)  # (row, column) of each pixel that differs
    assert len(differ) == 0, (f"{context}: {len(differ)} pixels differ, by up to "
                              f"{difference.max()}, the first at (row, column) "
                              f"{tuple(differ[0])}")


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


def layout_problems(figure, drawn: bool = False) -> list:
    """What a reader would see as broken in the figure's layout, drawn as it is now: a text
    reaching outside the figure, or lying over a colour bar, over an Axes it does not
    belong to, or over another text. Texts are the shown ``Text`` artists (titles, labels,
    tick labels, legends, annotations); a rotated text is the rotated rectangle its glyphs
    fill, not the upright box around it. One pixel of overlap is allowed, as
    anti-aliasing blurs an edge by that much. ``drawn``: the figure's canvas was drawn
    since its last change (a full draw), so its layout is up to date."""
    if not drawn:
        figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    bounds = figure.bbox
    undrawn = undrawn_tick_labels(figure)
    legends = legends_of_texts(figure)
    texts = [text for text in figure.findobj(Text)
             if shown(text, legends.get(text)) and text not in undrawn]
    corners = {text: text_corners(text, renderer) for text in texts}
    axes_boxes = [(ax, ax.get_window_extent(renderer)) for ax in figure.axes if ax.get_visible()]
    problems = []
    for text in texts:
        name = describe(text)
        x, y = corners[text][:, 0], corners[text][:, 1]
        if (x.min() < bounds.x0 - 1 or x.max() > bounds.x1 + 1 or y.min() < bounds.y0 - 1
                or y.max() > bounds.y1 + 1):
            problems.append(f"{name} reaches outside the figure")
        for ax, box in axes_boxes:
            box_corners = np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1],
                                    [box.x0, box.y1]])
            if ax is not text.axes and rectangles_overlap(corners[text], box_corners):
                problems.append(f"{name} lies over {describe_axes(ax)}")
    for first, second in combinations(texts, 2):
        if rectangles_overlap(corners[first], corners[second]):
            problems.append(f"{describe(first)} overlaps {describe(second)}")
    return problems


def text_corners(text, renderer) -> np.ndarray:
    """The four corners, in display pixels, of the rectangle a text's glyphs fill, rotated
    as the text is: its upright size (the extent at rotation 0), turned by its angle about
    the centre of the box matplotlib reports for it rotated."""
    box = text.get_window_extent(renderer)
    angle = text.get_rotation()
    if angle % 180 == 0:
        width, height = box.width, box.height
    else:
        text.set_rotation(0)
        upright = text.get_window_extent(renderer)
        text.set_rotation(angle)
        width, height = upright.width, upright.height
    theta = np.radians(angle)
    along = np.array([np.cos(theta), np.sin(theta)]) * width / 2
    across = np.array([-np.sin(theta), np.cos(theta)]) * height / 2
    centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
    return np.array([centre - along - across, centre + along - across,
                     centre + along + across, centre - along + across])


def rectangles_overlap(first: np.ndarray, second: np.ndarray, allowed: float = 1.0) -> bool:
    """Whether two rectangles (4 corners each) overlap by more than ``allowed`` pixels: by
    the separating axis theorem, they do unless some edge direction of either separates
    their projections."""
    for rectangle in (first, second):
        for edge in (rectangle[1] - rectangle[0], rectangle[3] - rectangle[0]):
            length = np.hypot(*edge)
            if length == 0:
                return False
            normal = np.array([-edge[1], edge[0]]) / length
            a, b = first @ normal, second @ normal
            if a.max() - b.min() <= allowed or b.max() - a.min() <= allowed:
                return False
    return True


def undrawn_tick_labels(figure) -> set:
    """Tick labels matplotlib keeps but does not draw: those of ticks outside the axis's
    view interval (a log axis's locator, for one, places ticks beyond its limits)."""
    undrawn = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            to_pixels = axis.get_transform()
            low, high = to_pixels.transform(low), to_pixels.transform(high)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                where = to_pixels.transform(tick.get_loc())
                if not low - abs(high - low) * 1e-6 <= where <= high + abs(high - low) * 1e-6:
                    undrawn.update((tick.label1, tick.label2))
    return undrawn


def legends_of_texts(figure) -> dict:
    """The legend each text of a legend belongs to: {text: legend}."""
    return {text: legend for legend in figure.findobj(Legend)
            for text in [*legend.get_texts(), legend.get_title()]}


def shown(text, legend=None) -> bool:
    """Whether a text is on the picture: visible, not empty, in a visible Axes and in a
    visible legend if it belongs to one (``legend``)."""
    return (text.get_visible() and bool(text.get_text().strip())
            and (text.axes is None or text.axes.get_visible())
            and (legend is None or legend.get_visible()))


def describe(text) -> str:
    where = f" of {describe_axes(text.axes)}" if text.axes is not None else ""
    return f"the text {text.get_text()!r}{where}"


def describe_axes(ax) -> str:
    label = ax.get_label() or ax.get_title() or "an Axes"
    return f"the Axes {label!r}"
