"""The course on JupyterLab's dark theme: its pictures and its explorers' words still read.

After a notebook has run in JupyterLab (the explorers' test runs it), "JupyterLab Dark" is
chosen from the Settings menu, as a learner would. Then every picture, static or an
explorer's, must paint its own light background edge to edge, so that its dark text and
lines keep their contrast on the dark page; and every piece of text in an explorer (labels,
values, messages) must contrast with what is behind it by at least 4.5 : 1, the WCAG AA
ratio for body text. Screenshots of the notebook on the dark theme are kept in
test-artifacts/. The theme is switched back to the light one afterwards, whatever happens,
since the server's settings are shared by the tests that follow.
"""

import io
import re

from PIL import Image

from tools.browser.lab import EXPLORER, IMAGE_TIMEOUT, PANEL

from .conftest import ARTIFACTS

# Notebooks with a static heatmap and an explorer whose controls are of every kind the
# course uses (sliders, dropdowns, toggle buttons, checkboxes, a text box).
DARK_NOTEBOOKS = ["02_causal_masking.ipynb", "06_padding_masks.ipynb"]
LIGHT_EDGE = 0.85  # relative luminance of a picture's edge: its own light background
DARK_PAGE = 0.2  # relative luminance of the page behind it on the dark theme
TEXT_CONTRAST = 4.5  # WCAG AA for normal text

# For every element of an explorer that shows text of its own: its colour and the first
# opaque background colour found from it upwards, as [r, g, b, a] lists.
TEXT_COLOURS = """explorer => {
    const rgba = value => (value.match(/[\\d.]+/g) || []).map(Number).concat([1]).slice(0, 4);
    const found = [];
    for (const element of explorer.querySelectorAll('*')) {
        const ownText = [...element.childNodes].some(
            node => node.nodeType === Node.TEXT_NODE && node.textContent.trim());
        const isField = ['INPUT', 'SELECT', 'BUTTON'].includes(element.tagName);
        if (!(ownText || isField) || element.offsetParent === null) continue;
        let behind = element, background = [0, 0, 0, 0];
        while (behind) {
            background = rgba(getComputedStyle(behind).backgroundColor);
            if (background[3] > 0.5) break;
            behind = behind.parentElement;
        }
        const text = (element.value || element.textContent || '').trim().slice(0, 40);
        found.push({text, colour: rgba(getComputedStyle(element).color), background});
    }
    return found;
}"""


def luminance(red, green, blue):
    """WCAG relative luminance of an sRGB colour given as 0-255 channels."""
    def linear(channel):
        channel /= 255
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4
    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(first, second):
    lighter, darker = sorted((luminance(*first[:3]), luminance(*second[:3])), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def edge_luminance(picture: Image.Image, inset: int = 2) -> float:
    """The median luminance of a ring of pixels ``inset`` pixels inside a screenshot's edge:
    the picture's own margin. (The outermost row or column can be the page around it when
    the element sits at a fraction of a pixel, which it does as cells above it change.)"""
    rgb = picture.convert("RGB")
    width, height = rgb.size
    left, top, right, bottom = inset, inset, width - 1 - inset, height - 1 - inset
    ring = [rgb.getpixel((x, y)) for x in range(left, right + 1) for y in (top, bottom)]
    ring += [rgb.getpixel((x, y)) for y in range(top, bottom + 1) for x in (left, right)]
    values = sorted(luminance(*pixel) for pixel in ring)
    return values[len(values) // 2]


def choose_theme(page, name: str):
    """Settings > Theme > ``name``, as a learner would, then wait until the page wears it."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(name)}$")).click()
    page.wait_for_function("name => document.body.dataset.jpThemeName === name", arg=name,
                           timeout=IMAGE_TIMEOUT)


def assert_it_reads_on_the_dark_theme(page, name: str):
    """Switch the notebook on screen (``name``, already run) to the dark theme, check its
    pictures and its explorers' text, and switch back to the light theme."""
    choose_theme(page, "JupyterLab Dark")
    try:
        page_colour = page.evaluate(
            "selector => getComputedStyle(document.querySelector(selector)).backgroundColor",
            f"{PANEL} .jp-Notebook")
        page_rgb = [float(value) for value in re.findall(r"[\d.]+", page_colour)[:3]]
        assert luminance(*page_rgb) < DARK_PAGE, f"the theme did not turn dark: {page_colour}"

        pictures = page.locator(f"{PANEL} .jp-OutputArea-output img")
        assert pictures.count() > 0, "no picture to look at"
        for index in range(pictures.count()):
            picture = pictures.nth(index)
            picture.scroll_into_view_if_needed()
            shot = Image.open(io.BytesIO(picture.screenshot()))
            edge = edge_luminance(shot)
            assert edge > LIGHT_EDGE, (
                f"picture {index} has a dark or see-through edge (luminance {edge:.2f}) on "
                "the dark theme: its text and lines would not read")

        explorers = page.locator(EXPLORER)
        assert explorers.count() > 0, "the notebook shows no explorer"
        ARTIFACTS.mkdir(exist_ok=True)
        for index in range(explorers.count()):
            explorer = explorers.nth(index)
            explorer.scroll_into_view_if_needed()
            explorer.screenshot(path=ARTIFACTS / f"dark-theme-{name[:2]}-explorer-{index}.png")
            texts = explorer.evaluate(TEXT_COLOURS)
            assert texts, f"explorer {index} shows no text"
            poor = [(item["text"], round(contrast(item["colour"], item["background"]), 2))
                    for item in texts if contrast(item["colour"], item["background"])
                    < TEXT_CONTRAST]
            assert not poor, f"explorer {index}: text that does not read on the dark theme {poor}"
        page.screenshot(path=ARTIFACTS / f"dark-theme-{name[:2]}.png")
    finally:
        choose_theme(page, "JupyterLab Light")
