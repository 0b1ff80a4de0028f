"""Live slides: RISE (Alt+R in JupyterLab) presents each notebook as its slide metadata says.

The deck must have one slide per cell marked "slide", open on the title, and go on to the
next marked slide, with the skipped Colab setup cell nowhere in it.
"""

import re

import nbformat
import pytest

from helpers.slides import slide_type

from .conftest import NOTEBOOKS
from .lab import PANEL

pytestmark = pytest.mark.browser
DECK_TIMEOUT = 60_000  # ms
CURRENT_SLIDE_TEXT = "() => document.querySelector('.reveal .slides > section.present')?.innerText"


def first_line(cell) -> str:
    return re.sub(r"[#*`$\\]", "", cell.source.strip().splitlines()[0]).strip()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_rise_opens_the_notebook_as_its_slides(page, jupyter_lab, notebook):
    base, token, _ = jupyter_lab
    slides = [cell for cell in nbformat.read(notebook, as_version=4).cells
              if slide_type(cell) == "slide"]
    page.goto(f"{base}/lab/tree/{notebook.name}?reset&token={token}")
    page.locator(f"{PANEL} .jp-Cell").first.click(timeout=DECK_TIMEOUT)
    page.keyboard.press("Escape")  # command mode, where RISE's shortcut lives
    page.keyboard.press("Alt+r")
    page.wait_for_function(
        "() => [...document.querySelectorAll('iframe')].some(f => f.src.includes('/rise/'))",
        timeout=DECK_TIMEOUT)
    deck = page.frame_locator("iframe[src*='/rise/']")
    deck.locator(".reveal .slides > section.present").wait_for(timeout=DECK_TIMEOUT)
    frame = next(frame for frame in page.frames if "/rise/" in frame.url)

    assert frame.evaluate("() => document.querySelectorAll('.reveal .slides > section').length") \
        == len(slides)
    assert frame.evaluate(CURRENT_SLIDE_TEXT).strip().startswith(first_line(slides[0]))
    assert "google.colab" not in frame.evaluate("() => document.querySelector('.reveal').innerText")
    deck.locator("body").press("ArrowRight")
    frame.wait_for_function(
        f"() => ({CURRENT_SLIDE_TEXT})()?.trim().startsWith({first_line(slides[1])!r})",
        timeout=10_000)
