"""Live slides: RISE (Alt+R in JupyterLab) presents each notebook as its slide metadata says.

The deck must have one slide per cell marked "slide", open on the title, and go on to the
next marked slide, with the skipped Colab setup cell nowhere in it.
"""

import re

import nbformat
import pytest

from tools.slides import RISE_SETTINGS, SLIDE_HEIGHT, SLIDE_WIDTH, slide_type

from .conftest import ARTIFACTS, NOTEBOOKS
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


# The size a reader sees: a paragraph's CSS font size times the scale reveal.js draws the
# canvas at (its width on screen over its layout width); and whether any paragraph of the
# slide on screen runs past the window's edges.
SHOWN_TEXT = """() => {
    const paragraphs = [...document.querySelectorAll(
        '.reveal .slides section.present .jp-RenderedMarkdown p')];
    const first = paragraphs[0];
    const scale = first.getBoundingClientRect().width / first.offsetWidth;
    const cut = paragraphs.some(p => p.getBoundingClientRect().left < 0
        || p.getBoundingClientRect().right > window.innerWidth);
    return {px: parseFloat(getComputedStyle(first).fontSize) * scale, cut};
}"""


@pytest.mark.xfail(strict=True, reason=(
    "RISE's text is not scaled for a projector yet (issue 18): jupyterlab-rise 0.43 lays "
    "the cells out at the window's width, so a smaller canvas scaled up cuts them off"))
def test_rise_scales_the_text_for_a_projector(browser, jupyter_lab):
    """RISE full screen at 1280 x 720 with the course's RISE settings: body text is shown
    at about 20 px, as in the static deck, and nothing runs off the screen."""
    base, token, served = jupyter_lab
    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    notebook.metadata["rise"] = dict(RISE_SETTINGS)
    name = "rise_settings_check.ipynb"
    nbformat.write(notebook, served / name)
    page = browser.new_page(viewport={"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT})
    try:
        page.goto(f"{base}/rise/{name}?token={token}")
        page.locator(".reveal .slides > section.present .jp-RenderedMarkdown p").first.wait_for(
            timeout=DECK_TIMEOUT)
        page.wait_for_timeout(1500)  # RISE's layout settles after the first paint
        shown = page.evaluate(SHOWN_TEXT)
        ARTIFACTS.mkdir(exist_ok=True)
        for number in (1, 2, 3):
            page.screenshot(path=ARTIFACTS / f"rise-1280x720-{number}.png")
            page.keyboard.press("ArrowRight" if number == 1 else "ArrowDown")
            page.wait_for_timeout(1500)
    finally:
        page.close()
    print(f"RISE body text at {SLIDE_WIDTH} x {SLIDE_HEIGHT}: {shown['px']:.1f} px")
    assert not shown["cut"], "text runs off the screen"
    assert 19 <= shown["px"] <= 21, f"body text shown at {shown['px']:.1f} px, not about 20 px"
