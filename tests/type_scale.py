"""How large a figure's text is seen, in a notebook and on a slide: the measure behind
"every figure the course shows can be read from the back of a room and on a laptop"
(tests/test_type_scale.py; every explorer after every step of its walk:
tests/widgets/test_explorer_walk.py).

A figure is shown as a PNG of its pixel size (inches x dpi), scaled down where it does not
fit: in JupyterLab to the notebook column, about 850 px wide on a 1280 x 800 laptop with
the file browser open; on a 1280 x 720 slide to about 1180 px of width and the slide's
720 px of height. Text of ``size`` pt drawn at ``dpi`` is then seen as large as text of

    size x dpi / 100 x scale   pt

drawn at matplotlib's 100 dpi and shown at its pixel size; the smallest text of every
figure must be seen at 11 pt or more in both places. Measured: every visible,
non-empty text artist (titles, tick and axis labels, legends, annotations) and the
heatmaps' cell labels (``helpers.plotting.CellLabels``, drawn as outlines, found by their
gid).
"""

import matplotlib.text

from tests.figures import cell_label_size, cell_labels_written, shown_cell_labels

SMALLEST_SIZE = 11  # pt, as seen
REFERENCE_DPI = 100  # matplotlib's: 11 pt at 100 dpi is about 15 px
COLUMN_WIDTH = 850  # px: a notebook column on a laptop
SLIDE_WIDTH, SLIDE_HEIGHT = 1180, 720  # px: the most a 1280 x 720 slide shows unscaled
# px: an explorer's static picture shares its slide with its two lines of code
# ("explorer = ..._explorer()", "explorer.picture()"): 92 px in the exported deck as
# Chromium lays it out (a 630 px picture made a 722 px screen), 8 px spare; the live
# explorer's controls take about as much.
EXPLORER_PICTURE_HEIGHT = SLIDE_HEIGHT - 100


def scales(figure, dpi: float) -> dict:
    """How much smaller than drawn the figure is seen, in each place it is shown."""
    width, height = figure.get_size_inches() * dpi
    return {"notebook column": min(1.0, COLUMN_WIDTH / width),
            "slide": min(1.0, SLIDE_WIDTH / width, SLIDE_HEIGHT / height)}


def drawn_texts(figure) -> list:
    """(what, size in pt) of every text the figure shows."""
    texts = []
    for artist in figure.findobj(matplotlib.text.Text):
        if not artist.get_visible() or not artist.get_text().strip():
            continue
        if artist.axes is not None and not artist.axes.get_visible():
            continue
        texts.append((repr(artist.get_text()), artist.get_fontsize()))
    for labels in shown_cell_labels(figure):
        if cell_labels_written(labels):
            where = labels.axes.get_title() if labels.axes is not None else ""
            texts.append((f"cell labels of {where!r}", cell_label_size(labels)))
    return texts


def too_small(figure, dpi: float) -> list:
    """Every text seen smaller than SMALLEST_SIZE, where and how large it is seen."""
    found = []
    for place, scale in scales(figure, dpi).items():
        for what, size in drawn_texts(figure):
            seen = size * dpi / REFERENCE_DPI * scale
            if seen < SMALLEST_SIZE - 1e-6:
                found.append(f"{what}: {size:g} pt seen at {seen:.1f} pt in the {place}")
    return found
