"""The offline deck (`make slides`): pinned assets from npm, copied next to the HTML, and
no URL on the network left in the pages."""

import json
import re
from pathlib import Path

import pytest

from tools import deck
from tools.course import ROOT, notebook_paths
from tools.slides import export, export_deck

pytestmark = pytest.mark.published

NOTEBOOKS = [ROOT / path for path in notebook_paths()]


@pytest.fixture(scope="module")
def offline_deck(tmp_path_factory, slide_assets):
    """Every notebook exported offline into one folder (assets installed once, in
    build/slides-assets, as `make slides` does)."""
    folder = tmp_path_factory.mktemp("deck")
    return export_deck(NOTEBOOKS, folder, assets_prefix=slide_assets)


def test_the_assets_are_pinned_to_exact_versions_with_checksums():
    pinned = deck.pinned_versions()
    assert set(pinned) == set(deck.COPIED)
    lock = json.loads((deck.ASSETS_PACKAGE / "package-lock.json").read_text())["packages"]
    for name, version in pinned.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} {version} is not exact"
        assert lock[f"node_modules/{name}"]["version"] == version, \
            f"package-lock.json is older than package.json for {name}: npm install " \
            "--package-lock-only in tools/deck_assets"
        assert lock[f"node_modules/{name}"]["integrity"].startswith("sha512-")
    assert lock[""]["dependencies"] == pinned


def test_remote_urls_finds_what_the_stock_template_loads(tmp_path):
    html = export(NOTEBOOKS[0], tmp_path).read_text(encoding="utf-8")
    found = " ".join(deck.remote_urls(html))
    for what in ("reveal.js", "mathjax", "require", "jquery", "mermaid"):
        assert what in found.lower(), f"the check missed the CDN's {what}"


def test_remote_urls_leaves_links_and_comments_alone():
    page = ('<a href="https://pytorch.org/docs">docs</a><p>see https://example.org</p>'
            "<script>// from https://github.com/hakimel/reveal.js\nrequire(['local.js'])"
            "</script><link href='assets/x.css'>")
    assert deck.remote_urls(page) == []
    assert deck.remote_urls("<script src='//cdn.example.org/x.js'></script>") == [
        "//cdn.example.org/x.js"]
    assert deck.remote_urls("<style>@font-face { src: url(https://fonts.x.org/f.woff) }"
                            "</style>") == ["https://fonts.x.org/f.woff"]


def test_remote_urls_reads_tags_as_html_does():
    """Where a regular expression over the page went wrong: an unquoted attribute loads
    too, a tag in a comment loads nothing, and tags inside a script's text are not tags."""
    assert deck.remote_urls("<img src=https://x.org/a.png>") == ["https://x.org/a.png"]
    assert deck.remote_urls("<!-- <script src='https://x.org/a.js'></script> -->") == []
    assert deck.remote_urls("<h1 data-src='//x.org/h.png'>t</h1>") == ["//x.org/h.png"]
    assert deck.loaded_urls("<script>let s = '<img src=\"b.png\">'</script><a href='c'>"
                            "<link href=d.css>") == ["d.css"]


def local_references(html: str) -> set:
    """Relative paths the page loads: src/href of tags but links, and require()'s paths."""
    found = {url.split("#")[0] for url in deck.loaded_urls(html) if not re.match(r"[a-z]+:", url)}
    found |= set(re.findall(r"[\"']((?:assets)/[^\"']+\.js)[\"']", html))
    return {url.split("?")[0] for url in found} - {""}


@pytest.mark.slow
def test_the_offline_deck_loads_nothing_from_the_network(offline_deck):
    assert len(offline_deck) == len(NOTEBOOKS)
    for page in offline_deck:
        html = page.read_text(encoding="utf-8")
        assert deck.remote_urls(html) == [], page.name
        references = local_references(html)
        assert {"assets/reveal.js/dist/reveal.js", "assets/requirejs/require.js",
                "assets/mathjax/MathJax.js"} <= references
        missing = [url for url in references if not (page.parent / url).is_file()]
        assert missing == [], f"{page.name} loads files the deck lacks: {missing}"


def test_the_copied_style_sheets_load_nothing_from_the_network(offline_deck):
    """A style sheet can import more (reveal.js's "simple" theme imports Google Fonts)."""
    sheets = sorted((offline_deck[0].parent / deck.ASSETS_DIR).rglob("*.css"))
    assert sheets
    for sheet in sheets:
        assert deck.remote_urls(f"<style>{sheet.read_text()}</style>") == [], sheet.name


def test_the_offline_deck_carries_the_explorers_widget_state(offline_deck):
    """The static pictures: each explorer's widget state (its last image) and the
    notebook's saved picture travel in the page."""
    for page in offline_deck:
        html = page.read_text(encoding="utf-8")
        assert 'type="application/vnd.jupyter.widget-state+json"' in html, page.name
        assert "data:image/png;base64," in html, page.name
        assert "assets/@jupyter-widgets/html-manager/dist/embed-amd.js" in html


def test_every_picture_of_the_deck_says_what_it_shows(offline_deck):
    """Alt text from the output's metadata (what the figure shows), not nbconvert's
    placeholder."""
    for page in offline_deck:
        html = page.read_text(encoding="utf-8")
        alts = re.findall(r'<img alt="([^"]*)"', html)
        assert alts, f"{page.name}: no picture with alt text"
        assert all(alt.strip() and "No description" not in alt for alt in alts), page.name
        assert html.count("<img ") == len(alts), f"{page.name}: a picture without alt text"


def test_make_slides_writes_the_offline_deck():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^slides:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert "-m tools.slides export" in recipe and "--online" not in recipe
    assert Path(deck.__file__).parent == ROOT / "tools"
