"""The offline deck (`make slides`) in Chromium with the network cut: reveal.js runs, the
slides advance, formulas are typeset by MathJax and the explorers' static pictures show
(their live cells, which need a kernel, are left out), all from the files next to the
HTML. Screenshots of three slides and of the first explorer of
each notebook go to test-artifacts/offline-deck/."""


import nbformat
import pytest

from tools.browser.lab import wait_until_still
from tools.slides import LINE_LIMITS, SLIDE_HEIGHT, SLIDE_WIDTH, export_deck, slide_type

from .conftest import ARTIFACTS, NOTEBOOKS

pytestmark = [pytest.mark.browser, pytest.mark.published]
LOAD_TIMEOUT = 60_000  # ms; the machine may be busy
# The text of the markdown cells with code, scripts and typeset maths taken out: what is
# left must hold no $...$ (MathJax 2 replaces each formula by its rendering).
MARKDOWN_TEXT = """() => [...document.querySelectorAll('.jp-MarkdownOutput')].map(node => {
    const copy = node.cloneNode(true);
    copy.querySelectorAll('code, pre, script, .MathJax_SVG, .MathJax_Preview')
        .forEach(element => element.remove());
    return copy.textContent;
}).join('\\n')"""
MATHJAX_DONE = """() => window.MathJax && MathJax.Hub && MathJax.Hub.queue
    && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running"""
# The explorers' static pictures: the output of each ``explorer.picture()`` cell.
PICTURE_CELLS = """[...document.querySelectorAll('.jp-CodeCell')]
    .filter(cell => cell.querySelector('.jp-InputArea').textContent.includes('.picture()'))"""
PICTURES = f"""() => {PICTURE_CELLS}
    .map(cell => cell.querySelector('.jp-OutputArea-output img'))
    .map(image => image && image.complete ? image.naturalWidth : 0)"""
LIVE_WIDGETS = "() => document.querySelectorAll('.jupyter-widgets').length"

# Go to the screen of the first explorer's static picture.
EXPLORER_SLIDE = f"""() => {{
    const screen = {PICTURE_CELLS}[0].closest('section');
    const slide = screen.parentElement.closest('section') || screen;
    const slides = [...document.querySelectorAll('.reveal .slides > section')];
    const vertical = slide === screen ? 0 : [...slide.children].indexOf(screen);
    location.hash = `#/${{slides.indexOf(slide)}}/${{vertical}}`;
}}"""


def has_maths(notebook) -> bool:
    return any(cell.cell_type == "markdown" and cell.source.count("$") >= 2
               and slide_type(cell) != "skip"
               for cell in nbformat.read(notebook, as_version=4).cells)


def has_explorer(notebook) -> bool:
    return "widgets" in nbformat.read(notebook, as_version=4).metadata


@pytest.fixture(scope="module")
def deck(tmp_path_factory, slide_assets):
    folder = tmp_path_factory.mktemp("offline-deck")
    pages = export_deck(NOTEBOOKS, folder, assets_prefix=slide_assets)
    return {page.name.split(".")[0]: page for page in pages}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_the_deck_works_with_the_network_cut(browser, deck, notebook):
    page = browser.new_page(viewport={"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT})
    blocked, failed = [], []

    def only_files(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    page.on("requestfailed", lambda request: failed.append(
        f"{request.url}: {request.failure}"))
    shots = ARTIFACTS / "offline-deck"
    shots.mkdir(parents=True, exist_ok=True)
    try:
        page.goto(deck[notebook.stem].as_uri(), wait_until="load")
        page.wait_for_selector(".reveal.ready", timeout=LOAD_TIMEOUT)
        page.wait_for_function(MATHJAX_DONE, timeout=LOAD_TIMEOUT)
        if has_maths(notebook):
            page.wait_for_selector(".MathJax_SVG", state="attached", timeout=LOAD_TIMEOUT)
        if has_explorer(notebook):
            page.wait_for_function(f"() => ({PICTURES})().some(width => width > 0)",
                                   timeout=LOAD_TIMEOUT)
        page.screenshot(path=shots / f"{notebook.stem}-1.png")

        first = page.evaluate("() => document.querySelector('section.present').innerText")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => location.hash === '#/1'", timeout=10_000)
        wait_until_still(page)  # past the slide transition
        page.screenshot(path=shots / f"{notebook.stem}-2.png")
        second = page.evaluate("() => document.querySelector('section.present').innerText")
        assert second != first, "the next slide shows the same content"
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowDown")
        wait_until_still(page)
        page.screenshot(path=shots / f"{notebook.stem}-3.png")

        if has_explorer(notebook):
            page.evaluate(EXPLORER_SLIDE)
            wait_until_still(page)
            page.screenshot(path=shots / f"{notebook.stem}-explorer.png")

        leftover = [line for line in page.evaluate(MARKDOWN_TEXT).splitlines()
                    if line.count("$") >= 2]
        assert leftover == [], f"formulas left as raw LaTeX: {leftover[:3]}"
        assert page.evaluate(LIVE_WIDGETS) == 0, "a live explorer is in a deck with no kernel"
        if not has_explorer(notebook):
            return
        pictures = page.evaluate(PICTURES)
        assert pictures and all(width > 0 for width in pictures), \
            "an explorer's static picture did not show"
        saved = page.evaluate("""() => [...document.querySelectorAll(
            '.jp-OutputArea-output img[src^="data:image/png"]')].map(i => i.naturalWidth)""")
        assert saved and all(width > 0 for width in saved), "a saved picture did not show"
    finally:
        page.close()
    assert blocked == [], f"the deck tried to load from the network: {blocked}"
    assert failed == [], f"the deck asked for files it does not have: {failed}"


# Every screen laid out at once at the slide's size (reveal.js shows one at a time), so
# that each code block can be measured in layout pixels.
ALL_SCREENS = (".reveal .slides section { display: block !important; position: relative "
               "!important; transform: none !important; } .reveal aside.notes { display: none; }")
# For each code block, shown code and printed text: its width in characters of its own
# font (measured on a canvas, unscaled), how many characters its longest line has, and
# whether a line is cut off (wider than the block) or wrapped (taller than its lines).
CODE_BLOCKS = """() => {
    const context = document.createElement('canvas').getContext('2d');
    const blocks = [...document.querySelectorAll(
        '.jp-InputArea-editor .highlight pre, .jp-OutputArea-output pre')]
        .filter(pre => !pre.closest('aside.notes'));
    return blocks.map(pre => {
        const style = getComputedStyle(pre);
        context.font = `${style.fontSize} ${style.fontFamily}`;
        const char = context.measureText('x'.repeat(100)).width / 100;
        const inner = pre.clientWidth - parseFloat(style.paddingLeft)
            - parseFloat(style.paddingRight);
        const lines = pre.textContent.replace(/\\n$/, '').split('\\n');
        const height = pre.clientHeight - parseFloat(style.paddingTop)
            - parseFloat(style.paddingBottom);
        return {
            kind: pre.closest('.jp-OutputArea-output') ? 'output' : 'source',
            budget: Math.floor(inner / char),
            longest: Math.max(...lines.map(line => line.length)),
            cut: pre.scrollWidth > pre.clientWidth + 1,
            wrapped: height > lines.length * parseFloat(style.lineHeight) + 2,
            first: lines[0].slice(0, 60),
        };
    });
}"""


def code_blocks(browser, page_path):
    page = browser.new_page(viewport={"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT})
    try:
        page.route("**/*", lambda route: route.continue_()
                   if route.request.url.startswith("file:") else route.abort())
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_selector(".reveal.ready", timeout=LOAD_TIMEOUT)
        page.add_style_tag(content=ALL_SCREENS)
        return page.evaluate(CODE_BLOCKS)
    finally:
        page.close()


def test_the_slides_code_blocks_hold_the_line_budgets(browser, deck):
    """CODE_LINE_CHARS and OUTPUT_LINE_CHARS, which tools.slides checks lines against, fit
    the deck's code blocks (shown code, printed text) in their own font, unwrapped."""
    blocks = code_blocks(browser, deck[NOTEBOOKS[0].stem])
    budgets = {kind: min(block["budget"] for block in blocks if block["kind"] == kind)
               for kind in ("source", "output")}
    print(f"characters per line at {SLIDE_WIDTH} x {SLIDE_HEIGHT}: {budgets}")
    for kind, limit in LINE_LIMITS.items():
        assert limit <= budgets[kind], (kind, limit, budgets)
        assert budgets[kind] - limit <= 4, f"the {kind} limit {limit} is stricter than needed"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_no_shown_code_line_is_cut_or_wrapped(browser, deck, notebook):
    bad = [f"{block['kind']} {block['first']!r}: {block['longest']} characters, "
           f"{'cut' if block['cut'] else 'wrapped'}"
           for block in code_blocks(browser, deck[notebook.stem])
           if block["cut"] or block["wrapped"]]
    assert bad == [], f"{len(bad)} code blocks do not fit:\n" + "\n".join(bad[:20])
