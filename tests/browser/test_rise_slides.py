"""Live slides: RISE (Alt+R in JupyterLab) presents each notebook as its slide metadata says.

Alt+R opens it from JupyterLab; each notebook's deck, opened at 1280 x 720, must have one
slide per cell marked "slide", open on the title, and go on to the next marked slide, with
the skipped Colab setup cell nowhere in it, and keep its text on the screen.
"""

import re

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tools.browser.lab import PANEL, wait_until_still
from tools.slides import CODE_LINE_CHARS, RISE_SETTINGS, SLIDE_HEIGHT, SLIDE_WIDTH, slide_type

from .conftest import ARTIFACTS, NOTEBOOKS

pytestmark = pytest.mark.browser
DECK_TIMEOUT = 60_000  # ms
CURRENT_SLIDE_TEXT = "() => document.querySelector('.reveal .slides > section.present')?.innerText"


def first_line(cell) -> str:
    return re.sub(r"[#*`$\\]", "", cell.source.strip().splitlines()[0]).strip()


def test_alt_r_in_jupyterlab_opens_rise_on_the_notebook(page, jupyter_lab):
    """The lecturer's way in: Alt+R in JupyterLab opens the notebook on screen in RISE,
    on its title slide (each notebook's deck is checked below, at 1280 x 720)."""
    base, token, _ = jupyter_lab
    notebook = NOTEBOOKS[0]
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
# The first code cell on screen (reveal.js hides the screens not shown): its font size,
# and how many characters of that font its editor holds on one line (measured on a canvas).
SHOWN_CODE = """() => {
    const line = [...document.querySelectorAll(
        '.reveal .slides section.present .jp-CodeCell .cm-line')]
        .find(element => {
            const box = element.getBoundingClientRect();
            return box.width > 0 && box.height > 0 && box.top >= 0
                && box.bottom <= window.innerHeight && element.checkVisibility();
        });
    if (!line) return null;
    const scroller = line.closest('.cm-scroller');
    const gutters = scroller.querySelector('.cm-gutters');
    const content = getComputedStyle(line.closest('.cm-content'));
    const style = getComputedStyle(line);
    const context = document.createElement('canvas').getContext('2d');
    context.font = `${style.fontSize} ${style.fontFamily}`;
    const char = context.measureText('x'.repeat(100)).width / 100;
    const inner = scroller.clientWidth - (gutters ? gutters.offsetWidth : 0)
        - parseFloat(content.paddingLeft) - parseFloat(content.paddingRight)
        - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return {px: parseFloat(style.fontSize), chars: Math.floor(inner / char)};
}"""


def test_rise_scales_the_text_for_a_projector(browser, jupyter_lab):
    """RISE full screen at 1280 x 720 with the course's RISE settings and its rise.css:
    body text is shown at about 20 px and code at about 19 px, as in the static deck;
    nothing runs off the screen, a code line of CODE_LINE_CHARS characters fits, and
    formulas are typeset."""
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
        wait_until_still(page)  # RISE scales the slide in after its first paint
        shown = page.evaluate(SHOWN_TEXT)
        # JupyterLab's own MathJax typesets the title slide's formula (sqrt(d_k)).
        formulas = page.locator(".reveal section.present mjx-container")
        try:
            formulas.first.wait_for(state="attached", timeout=DECK_TIMEOUT)
        except PlaywrightTimeoutError:
            pass  # counted below
        formulas = formulas.count()
        ARTIFACTS.mkdir(exist_ok=True)
        code, number = None, 0
        while code is None and number < 12:  # screen by screen to the first code cell
            number += 1
            if number <= 3:
                page.screenshot(path=ARTIFACTS / f"rise-1280x720-{number}.png")
            page.keyboard.press("Space")
            wait_until_still(page)  # past reveal.js's transition
            code = page.evaluate(SHOWN_CODE)
        page.screenshot(path=ARTIFACTS / "rise-1280x720-code.png")
    finally:
        page.close()
    print(f"RISE at {SLIDE_WIDTH} x {SLIDE_HEIGHT}: body text {shown['px']:.1f} px, "
          f"code {code and code['px']} px, {code and code['chars']} characters per code line")
    assert not shown["cut"], "text runs off the screen"
    assert 19 <= shown["px"] <= 21, f"body text shown at {shown['px']:.1f} px, not about 20 px"
    assert formulas > 0, "the title slide's formula is not typeset"
    assert code is not None, "no code cell in the first screens"
    assert 18 <= code["px"] <= 20, f"code shown at {code['px']} px, not about 19 px"
    assert code["chars"] >= CODE_LINE_CHARS, code


# Whether any paragraph or code line of the screen on show runs past the window's sides.
CUT_OFF = """() => [...document.querySelectorAll(
        '.reveal .slides section.present .jp-RenderedMarkdown p, '
        + '.reveal .slides section.present .cm-line')]
    .filter(element => element.checkVisibility())
    .some(element => element.getBoundingClientRect().left < 0
        || element.getBoundingClientRect().right > window.innerWidth + 1)"""


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_rise_presents_the_notebook_as_its_slides_whole_at_1280x720(browser, jupyter_lab,
                                                                    notebook):
    """Each notebook in RISE at 1280 x 720 with its own settings: one slide per cell marked
    "slide", opening on the title, the skipped Colab setup cell nowhere in it, the right
    arrow going on to the next marked slide; the title slide and the next two screenshot
    to test-artifacts/rise/ for a reader to look at, with no paragraph or code line
    running off the screen."""
    base, token, _ = jupyter_lab
    slides = [cell for cell in nbformat.read(notebook, as_version=4).cells
              if slide_type(cell) == "slide"]
    folder = ARTIFACTS / "rise"
    folder.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT})
    cut = []
    try:
        page.goto(f"{base}/rise/{notebook.name}?token={token}")
        page.locator(".reveal .slides > section.present .jp-RenderedMarkdown p").first.wait_for(
            timeout=DECK_TIMEOUT)
        assert page.evaluate(
            "() => document.querySelectorAll('.reveal .slides > section').length") == len(slides)
        assert page.evaluate(CURRENT_SLIDE_TEXT).strip().startswith(first_line(slides[0]))
        assert "google.colab" not in page.evaluate(
            "() => document.querySelector('.reveal').innerText")
        wait_until_still(page)  # RISE scales the slide in after its first paint
        for number in (1, 2, 3):
            page.screenshot(path=folder / f"{notebook.stem}-{number}.png")
            if page.evaluate(CUT_OFF):
                cut.append(number)
            page.keyboard.press("ArrowRight")
            if number == 1:
                page.wait_for_function(
                    f"() => ({CURRENT_SLIDE_TEXT})()?.trim()"
                    f".startsWith({first_line(slides[1])!r})", timeout=10_000)
            wait_until_still(page)  # past reveal.js's transition
    finally:
        page.close()
    assert cut == [], f"slides {cut} of {notebook.name} run off the screen"
