"""The course's website (`make site`) in Chromium, opened from disk with the network cut:
every page loads with no failed request and no console error, its formulas typeset by the
MathJax in its own folder and its pictures shown with alt text; every internal link
resolves; a notebook's download button offers the course's notebook; the search finds
"causal_lower_right" on notebook 7's page and ranks notebook 6 first for "padding mask";
the theme's launch buttons, given an address, hold the URLs tools.links writes. On a phone
(390 x 844) no notebook's page scrolls sideways, its navigation and contents drawers fit
the screen, and it has one search box. Screenshots of the home page and of a notebook's
page, light and dark, and of notebooks 1 and 6 on a phone go to test-artifacts/site/.

`make site` runs once, into a temporary folder, with no npm on the PATH (the site installs
with pip alone): it installs the site extra into .venv the first time, as it would for a
maintainer."""

import itertools
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import nbformat
import pytest

from tools import course, deck, links
from tools.site import pages

from .conftest import ARTIFACTS, ROOT

pytestmark = [pytest.mark.browser, pytest.mark.published]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"  # where `make site` installs the site extra
NODE_PROGRAMS = {"npm", "npx", "node", "nodejs", "corepack"}  # hidden from the builds
LOAD_TIMEOUT = 60_000  # ms; the machine may be busy
SHOWN_NOTEBOOK = "02_causal_masking"  # the notebook page of the screenshots
SEARCHED, FOUND_ON = "causal_lower_right", "07_pytorch_attention"
RANKED, RANKED_FIRST = "padding mask", "06_padding_masks"  # a title against a heading
PHONE = {"width": 390, "height": 844}  # CSS pixels, a common phone's
PHONE_SHOTS = ["01_self_attention", "06_padding_masks"]
ADDRESS = pages.Address("someone/causal-attention", "main", "https://hub.example.org")
MATHJAX_DONE = """() => window.MathJax && MathJax.Hub && MathJax.Hub.queue
    && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running"""
# What a page shows and links to, read once per page.
PAGE_FACTS = """() => ({
    ids: [...document.querySelectorAll('[id]')].map(element => element.id),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    images: [...document.querySelectorAll('img')].map(image => ({
        src: image.getAttribute('src'), alt: image.getAttribute('alt') || '',
        width: image.complete ? image.naturalWidth : 0,
        caption: image.closest('figure')?.querySelector('figcaption .caption-text')?.textContent
            || ''})),
    headings: [...document.querySelectorAll('article h1, article h2, article h3, article h4,'
        + ' article h5, article h6')].map(h => [Number(h.tagName[1]), h.textContent.trim()]),
    formulas: document.querySelectorAll('span.math.notranslate, div.math.notranslate').length,
    typeset: [...document.querySelectorAll('span.math.notranslate, div.math.notranslate')]
        .filter(math => math.querySelector('.MathJax')).length,
    mathjax: [...document.querySelectorAll('script[src*="MathJax.js"]')].map(s => s.src),
    mathjaxVersion: window.MathJax ? MathJax.version : null,
    live: document.querySelectorAll('.course-live').length,
    launch: [...document.querySelectorAll('.dropdown-launch-buttons a')].map(a => a.href),
    repository: [...document.querySelectorAll('a.btn-source-repository-button')]
        .map(a => a.href),
    downloads: [...document.querySelectorAll('.dropdown-download-buttons a')]
        .map(a => a.href),
    text: document.body.innerText,
})"""


@pytest.fixture(scope="session")
def path_without_npm(tmp_path_factory) -> str:
    """A PATH of one folder that links every program this PATH finds, but Node.js's."""
    folder = tmp_path_factory.mktemp("path-without-npm")
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        for program in sorted(Path(directory).glob("*")) if Path(directory).is_dir() else []:
            link = folder / program.name
            if program.name not in NODE_PROGRAMS and not link.is_symlink() \
                    and program.is_file() and os.access(program, os.X_OK):
                link.symlink_to(program)
    assert shutil.which("npm", path=str(folder)) is None
    return str(folder)


def make_site(folder: Path, path: str, *arguments) -> Path:
    """`make site` into ``folder`` with ``path`` as PATH; with ``arguments``, tools.site's
    (after make has installed what it needs)."""
    # A .venv made now takes the real interpreter, not the temporary link to it.
    python = shutil.which("python3")
    command = (["make", "--no-print-directory", "site", f"SITE_DIR={folder}",
                *([f"PYTHON={os.path.realpath(python)}"] if python else [])] if not arguments
               else [str(VENV_PYTHON), "-m", "tools.site", "--output-dir", str(folder),
                     *arguments])
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PATH": path})
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return folder


@pytest.fixture(scope="session")
def site(tmp_path_factory, path_without_npm):
    """`make site` with no npm on the PATH."""
    return make_site(tmp_path_factory.mktemp("site") / "site", path_without_npm)


@pytest.fixture(scope="session")
def published_site(site, tmp_path_factory, path_without_npm):
    """One notebook's page built with a public address and a hub (`site` installed the
    site extra)."""
    return make_site(tmp_path_factory.mktemp("published") / "site", path_without_npm,
                     "--repo", ADDRESS.repo, "--ref", ADDRESS.ref, "--hub", ADDRESS.hub,
                     "--notebook", FOUND_ON)


def site_pages(site: Path) -> list:
    """Every HTML page of the site (the theme's template files under _static aside)."""
    return sorted(path for path in site.rglob("*.html")
                  if "_static" not in path.relative_to(site).parts)


def network_cut(page) -> dict:
    """Abort every request but for a file, and record what failed or was reported."""
    seen = {"blocked": [], "failed": [], "console": []}

    def only_files(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            seen["blocked"].append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    page.on("requestfailed", lambda request: seen["failed"].append(
        f"{request.url}: {request.failure}"))
    page.on("console", lambda message: seen["console"].append(message.text)
            if message.type == "error" else None)
    page.on("pageerror", lambda error: seen["console"].append(str(error)))
    return seen


def open_page(page, path: Path):
    page.goto(path.as_uri(), wait_until="load")
    if page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
        page.wait_for_function(MATHJAX_DONE, timeout=LOAD_TIMEOUT)


@pytest.fixture(scope="session")
def visited(browser, site):
    """Every page opened once with the network cut: {page: what it loaded and shows}."""
    found = {}
    for path in site_pages(site):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            seen = network_cut(page)
            open_page(page, path)
            found[path] = {**page.evaluate(PAGE_FACTS), **seen}
        finally:
            page.close()
    return found


def test_the_site_has_every_page(site):
    names = {path.relative_to(site).as_posix() for path in site_pages(site)}
    expected = {"index.html", "search.html", "run-locally.html", "lecturers.html",
                "hub-admins.html"}
    expected |= {f"{entry.name}.html" for entry in course.notebooks()}
    expected |= {f"{pages.solution_page_name(exercise)}.html"
                 for exercise in course.exercises()}
    assert expected <= names, f"missing: {sorted(expected - names)}"


def test_every_page_loads_from_disk_with_no_network_and_no_error(visited):
    problems = {path.name: {kind: facts[kind] for kind in ("blocked", "failed", "console")
                            if facts[kind]}
                for path, facts in visited.items()}
    assert {name: found for name, found in problems.items() if found} == {}


def test_every_formula_is_typeset(visited):
    untypeset = {path.name: f"{facts['typeset']} of {facts['formulas']}"
                 for path, facts in visited.items() if facts["typeset"] < facts["formulas"]}
    assert untypeset == {}
    assert visited[next(path for path in visited if path.stem == SHOWN_NOTEBOOK)]["formulas"]


def test_built_without_npm_the_pages_load_mathjax_from_the_sites_folder(
        site, visited, path_without_npm):
    """`make site` ran with no npm on the PATH (the fixtures); the MathJax that typesets
    the formulas is the offline deck's version, loaded from the site's own folder."""
    assert shutil.which("npm", path=path_without_npm) is None
    assert shutil.which("make", path=path_without_npm) is not None
    with_maths = {path: facts for path, facts in visited.items() if facts["formulas"]}
    assert any(path.stem == SHOWN_NOTEBOOK for path in with_maths)
    folder = (site / "_static" / "mathjax").resolve()
    for path, facts in with_maths.items():
        [script] = facts["mathjax"]
        url = urlparse(script)
        assert url.scheme == "file" and Path(unquote(url.path)).parent == folder, script
        assert facts["mathjaxVersion"] == deck.pinned_versions()["mathjax"], path.name


STRAIGHT_QUOTES = str.maketrans("‘’“”", "''\"\"")  # Sphinx's smart quotes, undone


def words(text: str) -> str:
    return " ".join(text.translate(STRAIGHT_QUOTES).split())


def test_every_picture_shows_with_alt_text_that_describes_it(visited):
    """A short alt text on one line; the stored description, where the alt text leaves
    some of it out, in the picture's caption."""
    pictures = 0
    for path, facts in visited.items():
        for image in facts["images"]:
            name = Path(image["src"]).name
            assert image["alt"].strip() and name not in image["alt"], (path.name, image)
            assert len(image["alt"]) <= pages.ALT_LIMIT and "\n" not in image["alt"], \
                (path.name, image["alt"])
            assert image["width"] > 0, f"{path.name}: {image['src']} did not load"
            pictures += 1
    notebook_pictures = 0
    for entry in course.notebooks():
        descriptions = [output["metadata"]["image/png"]["alt"]
                        for cell in nbformat.read(ROOT / entry.path, as_version=4).cells
                        for output in cell.get("outputs", [])
                        if "image/png" in output.get("data", {})]
        notebook_pictures += len(descriptions)
        facts = next(facts for path, facts in visited.items() if path.stem == entry.name)
        shown = {(image["alt"], words(image["caption"])) for image in facts["images"]}
        for description in descriptions:
            alt = pages.short_alt(description)
            caption = "" if alt == description else words(description)
            assert (alt, caption) in shown, (entry.name, alt)
    assert pictures >= notebook_pictures


def test_every_explorer_is_a_picture_and_a_line_saying_it_is_live(visited):
    for entry in course.notebooks():
        notebook = nbformat.read(ROOT / entry.path, as_version=4)
        widgets = sum(bool(pages.live_widget_ids(cell)) for cell in notebook.cells)
        facts = next(facts for path, facts in visited.items() if path.stem == entry.name)
        assert facts["live"] == widgets, entry.name
        assert pages.LIVE_TITLE in facts["text"]


def test_the_lecturers_notes_and_the_solutions_stay_off_the_notebook_pages(visited):
    for entry in course.notebooks():
        facts = next(facts for path, facts in visited.items() if path.stem == entry.name)
        assert "For the lecturer." not in facts["text"], entry.name
        for exercise in entry.exercises:
            solution = next(facts for path, facts in visited.items()
                            if path.as_posix().endswith(
                                f"{pages.solution_page_name(exercise)}.html"))
            assert any(link.split("#")[0].endswith(f"/{entry.name}.html")
                       for link in solution["links"]), f"{exercise}: no link back"
            assert any(link.endswith(f"{pages.solution_page_name(exercise)}.html")
                       for link in facts["links"]), f"{exercise}: no link to its solution"


def test_every_internal_link_resolves(visited):
    ids = {path.resolve(): set(facts["ids"]) for path, facts in visited.items()}
    broken = []
    for path, facts in visited.items():
        for link in facts["links"]:
            url = urlparse(link)
            if url.scheme != "file":
                continue
            target = Path(unquote(url.path))
            if not target.is_file():
                broken.append(f"{path.name} -> {link}")
            elif url.fragment and target.resolve() in ids \
                    and unquote(url.fragment) not in ids[target.resolve()]:
                broken.append(f"{path.name} -> {link} (no such anchor)")
    assert broken == []


def test_headings_go_down_one_level_at_a_time(visited):
    for path, facts in visited.items():
        levels = [level for level, _ in facts["headings"]]
        if not levels:
            continue
        assert levels[0] == 1 and levels.count(1) == 1, (path.name, facts["headings"][:3])
        jumps = [(a, b) for a, b in itertools.pairwise(levels) if b > a + 1]
        assert jumps == [], path.name


def test_without_an_address_there_are_no_launch_links_and_pages_say_how_to_run(visited):
    for entry in course.notebooks():
        facts = next(facts for path, facts in visited.items() if path.stem == entry.name)
        assert facts["launch"] == [] and facts["repository"] == [], entry.name
        assert "make lab" in facts["text"], entry.name


def test_a_notebooks_download_button_offers_the_course_notebook(site, visited):
    """The theme's download button points at _sources/NAME.ipynb: the notebook as the
    course keeps it (the lecturer's notes and live widgets in), not the page's source."""
    for entry in course.notebooks():
        facts = next(facts for path, facts in visited.items() if path.stem == entry.name)
        offered = site / "_sources" / f"{entry.name}.ipynb"
        assert offered.as_uri() in facts["downloads"], (entry.name, facts["downloads"])
        assert offered.read_bytes() == (ROOT / entry.path).read_bytes(), entry.name


def test_the_search_finds_causal_lower_right_from_disk(browser, site):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    seen = network_cut(page)
    try:
        open_page(page, site / "index.html")
        page.locator(".search-button-field:visible").first.click()  # opens the search box
        box = page.locator("input[name='q']:visible").first
        box.fill(SEARCHED)
        box.press("Enter")
        page.wait_for_selector("#search-results ul li a", timeout=LOAD_TIMEOUT)
        results = page.evaluate(
            "() => [...document.querySelectorAll('#search-results ul li a')].map(a => a.href)")
        assert urlparse(results[0]).path.endswith(f"/{FOUND_ON}.html"), results
        page.locator("#search-results ul li a").first.click()
        page.wait_for_load_state("load")
        assert urlparse(page.url).path.endswith(f"/{FOUND_ON}.html")
        assert SEARCHED in page.locator("article").inner_text()
    finally:
        page.close()
    assert seen == {"blocked": [], "failed": [], "console": []}


def test_the_search_ranks_the_page_whose_title_matches_first(browser, site):
    """Sphinx's own search (searchtools.js, with the site's scorer) on the built index:
    "padding mask" is notebook 6's title, and a word of it is in notebook 2's."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    seen = network_cut(page)
    try:
        page.goto(f"{(site / 'search.html').as_uri()}?q={RANKED.replace(' ', '+')}")
        page.wait_for_selector("#search-results ul li a", timeout=LOAD_TIMEOUT)
        page.wait_for_function("() => !document.querySelector('#search-progress')"
                               "?.textContent.includes('Preparing')", timeout=LOAD_TIMEOUT)
        results = page.evaluate("() => [...document.querySelectorAll('#search-results ul li "
                                "a')].map(a => a.getAttribute('href'))")
    finally:
        page.close()
    assert results[0] == f"{RANKED_FIRST}.html", results
    assert seen == {"blocked": [], "failed": [], "console": []}


# What a phone shows of a page: its width and the search controls it shows.
PHONE_FACTS = """() => ({
    scrollWidth: document.documentElement.scrollWidth,
    clientWidth: document.documentElement.clientWidth,
    search: [...document.querySelectorAll('.search-button__button, input[name="q"]')]
        .filter(element => element.getClientRects().length).length,
})"""
# The links a drawer shows: how many, and the right edge of the widest.
DRAWER_LINKS = """selector => {
    const links = [...document.querySelectorAll(selector + ' a')]
        .filter(a => a.getClientRects().length && getComputedStyle(a).visibility !== 'hidden');
    return {count: links.length,
            right: Math.max(0, ...links.map(a => a.getBoundingClientRect().right))};
}"""


def drawer(page, toggle: str, sidebar: str) -> dict:
    """Open a drawer with its button in the page's header, read its links, close it."""
    page.locator(f"{toggle}:visible").first.click()
    page.wait_for_function(f"() => getComputedStyle(document.querySelector('{sidebar}'))"
                           ".visibility === 'visible'", timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(400)  # the drawer slides in
    found = page.evaluate(DRAWER_LINKS, sidebar)
    page.keyboard.press("Escape")
    return found


@pytest.fixture(scope="session")
def on_phone(browser, site):
    """Every notebook's page at 390 x 844: {name: what it shows, and its drawers' links}."""
    found = {}
    shots = ARTIFACTS / "site"
    shots.mkdir(parents=True, exist_ok=True)
    for entry in course.notebooks():
        page = browser.new_page(viewport=PHONE, is_mobile=True, has_touch=True)
        try:
            network_cut(page)
            open_page(page, site / f"{entry.name}.html")
            facts = page.evaluate(PHONE_FACTS)
            if entry.name in PHONE_SHOTS:
                page.screenshot(path=shots / f"{entry.name}-phone.png")
            facts["navigation"] = drawer(page, "button.primary-toggle", ".bd-sidebar-primary")
            facts["contents"] = drawer(page, "button.secondary-toggle",
                                       ".bd-sidebar-secondary")
            found[entry.name] = facts
        finally:
            page.close()
    return found


def test_on_a_phone_no_notebook_page_scrolls_sideways(on_phone):
    wider = {name: facts["scrollWidth"] - facts["clientWidth"]
             for name, facts in on_phone.items()
             if facts["scrollWidth"] > facts["clientWidth"]}
    assert wider == {}, "pixels of sideways scroll at 390 px"


def test_on_a_phone_the_navigation_and_contents_fit_the_screen(on_phone):
    """The header's buttons open the site's navigation (every notebook listed) and the
    page's contents, each drawer's links within the screen's width."""
    notebooks = len(course.notebooks())
    for name, facts in on_phone.items():
        assert facts["navigation"]["count"] >= notebooks, (name, facts["navigation"])
        assert facts["contents"]["count"] >= 3, (name, facts["contents"])
        for which in ("navigation", "contents"):
            assert facts[which]["right"] <= PHONE["width"], (name, which, facts[which])


def test_a_page_has_one_search_box_on_a_phone_and_on_a_wide_screen(on_phone, browser, site):
    assert {name: facts["search"] for name, facts in on_phone.items()} \
        == {name: 1 for name in on_phone}
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    network_cut(page)
    try:
        for entry in course.notebooks():
            open_page(page, site / f"{entry.name}.html")
            assert page.evaluate(PHONE_FACTS)["search"] == 1, entry.name
    finally:
        page.close()


def same_url(found: str, expected: str) -> bool:
    """The same address and the same query, however its parameters are ordered and
    escaped (the theme and tools.links escape nbgitpuller's query differently)."""
    found, expected = urlparse(found), urlparse(expected)
    return (found.scheme, found.netloc, found.path, parse_qs(found.query)) \
        == (expected.scheme, expected.netloc, expected.path, parse_qs(expected.query))


def test_with_an_address_the_theme_launches_the_documented_urls(browser, published_site):
    """The theme builds its links from repository_url, repository_branch, path_to_docs and
    the page's name (tools/site/build.py): they must be the links tools.links writes."""
    path = f"notebooks/{FOUND_ON}.ipynb"
    expected = {"Binder": links.binder_url(ADDRESS.repo, path, ADDRESS.ref),
                "Colab": links.colab_url(ADDRESS.repo, path, ADDRESS.ref),
                "JupyterHub": links.nbgitpuller_url(ADDRESS.hub, ADDRESS.repo, path,
                                                    ADDRESS.ref)}
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    seen = network_cut(page)
    try:
        open_page(page, published_site / f"{FOUND_ON}.html")
        page.locator(".dropdown-launch-buttons button").click()  # the rocket
        for name, url in expected.items():
            button = page.locator(".dropdown-launch-buttons a", has_text=name)
            assert button.is_visible(), name
            assert same_url(button.get_attribute("href"), url), name
        assert page.locator("a.btn-source-repository-button").get_attribute("href") \
            == links.repo_url(ADDRESS.repo)
        assert "Run this notebook on your machine" not in page.locator("article").inner_text()
    finally:
        page.close()
    assert seen == {"blocked": [], "failed": [], "console": []}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots_of_the_home_page_and_a_notebook(browser, site, scheme):
    shots = ARTIFACTS / "site"
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    network_cut(page)
    try:
        for name in ("index", SHOWN_NOTEBOOK):
            open_page(page, site / f"{name}.html")
            assert page.evaluate("() => document.documentElement.dataset.theme") == scheme
            page.screenshot(path=shots / f"{name}-{scheme}.png")
        # The explorer's picture, and what its colours mean, kept in dark mode.
        picture = page.locator(".cell_output img").last
        picture.scroll_into_view_if_needed()
        page.screenshot(path=shots / f"{SHOWN_NOTEBOOK}-explorer-{scheme}.png")
        assert picture.evaluate("image => getComputedStyle(image).filter") == "none"
    finally:
        page.close()
