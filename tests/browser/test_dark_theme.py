"""The contrast measures the dark-theme check uses (tests/browser/dark_theme.py; the
explorers' test runs it on the notebooks it names)."""

import pytest
from PIL import Image

from .dark_theme import contrast, edge_luminance, luminance


def test_luminance_and_contrast_follow_wcag():
    assert luminance(255, 255, 255) == pytest.approx(1.0)
    assert luminance(0, 0, 0) == 0.0
    assert contrast([0, 0, 0], [255, 255, 255]) == pytest.approx(21.0)
    assert contrast([118, 118, 118], [255, 255, 255]) == pytest.approx(4.54, abs=0.01)
    white = Image.new("RGB", (20, 10), "white")
    white.paste((0, 0, 0), (5, 3, 15, 7))  # dark ink inside, a light edge around it
    assert edge_luminance(white) == pytest.approx(1.0)
    assert edge_luminance(Image.new("RGBA", (20, 10), (0, 0, 0, 255))) == 0.0


def test_edge_luminance_reads_the_pictures_margin_not_the_page_around_it():
    framed = Image.new("RGB", (20, 10), "black")  # a screenshot one pixel off: the dark
    framed.paste((255, 255, 255), (1, 1, 19, 9))  # page shows on its outermost ring
    assert edge_luminance(framed) == pytest.approx(1.0)
    see_through = Image.new("RGB", (20, 10), "black")  # the page through a clear picture
    see_through.paste((255, 255, 255), (6, 4, 14, 6))  # only its ink is light
    assert edge_luminance(see_through) == 0.0
