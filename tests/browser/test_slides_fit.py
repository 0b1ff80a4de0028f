"""Every screen of the exported slides fits a 1280 x 720 slide, measured in Chromium.

The slides page is rendered with nbconvert's own styles and the network cut off, so that
reveal.js does not lay the sections out: each screen's section is then measured at the
slide's width. This checks the estimate that ``tools.slides.assign`` works with.
"""

import pytest

from tools.slides import SLIDE_HEIGHT, SLIDE_WIDTH, export

from .conftest import NOTEBOOKS

MEASURE_SCREENS = """() => [...document.querySelectorAll('.reveal .slides section')]
    .filter(section => !section.querySelector('section'))
    .map(section => section.scrollHeight)"""


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_every_screen_fits_the_slide(browser, notebook, tmp_path):
    slides = export(notebook, tmp_path)
    page = browser.new_page(viewport={"width": SLIDE_WIDTH + 100, "height": SLIDE_HEIGHT})
    try:
        page.route("**/*", lambda route: route.continue_()
                   if route.request.url.startswith("file:") else route.abort())
        page.goto(slides.as_uri(), wait_until="load")
        page.add_style_tag(content=f".reveal .slides section {{ display: block; "
                                   f"position: relative; width: {SLIDE_WIDTH}px; }} "
                                   ".reveal aside.notes { display: none; }")
        heights = page.evaluate(MEASURE_SCREENS)
    finally:
        page.close()
    assert heights, "no slides found"
    print(f"{notebook.stem}: {len(heights)} screens, tallest {max(heights)} px")
    too_tall = [(number, height) for number, height in enumerate(heights, 1)
                if height > SLIDE_HEIGHT]
    assert not too_tall, f"screens (number, px) taller than {SLIDE_HEIGHT} px: {too_tall}"
