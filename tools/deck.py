"""The offline deck: reveal.js slides that load nothing from the network.

nbconvert's slides template loads reveal.js, MathJax 2, require.js, jQuery and the widget
HTML manager from CDNs (unpinned). Here they come from npm packages at the exact versions
of ``tools/deck_assets/package.json`` (``package-lock.json`` pins their dependencies and
checksums), installed once with ``npm ci`` into ``build/slides-assets`` and copied next to
the HTML (``assets/``), so that the folder of slides works on a laptop with no network or
behind a school's filter. Formulas are drawn by MathJax's SVG output, which needs no web
fonts (a page opened from disk may not load fonts from disk in Chromium). Explorers show
their static picture (the ``explorer.picture()`` cell); their live cells are left out
(``tools.slides.without_live_widgets``): without a kernel their controls would change
nothing. The widget manager stays, for any other widget a notebook saves.

    python -m tools.slides export --output-dir build/slides    # what `make slides` runs
"""

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
ASSETS_PACKAGE = HERE / "deck_assets"  # package.json and package-lock.json
TEMPLATES = HERE / "deck_template"
TEMPLATE_NAME = "course_reveal"
ASSETS_DIR = "assets"  # next to the slides' HTML
# What is copied from each package: the files the page loads, and what they load in turn.
COPIED = {
    "reveal.js": ["dist/reveal.js", "dist/reveal.css", "dist/theme/white.css",
                  "dist/theme/fonts/source-sans-pro", "plugin/notes/notes.js"],
    # MathJax 2 as the template drives it, with the SVG output and its TeX font only.
    "mathjax": ["MathJax.js", "config/TeX-AMS_SVG-full.js", "config/Safe.js", "extensions/*.js",
                "extensions/TeX", "jax/element", "jax/input/TeX", "jax/output/SVG/*.js",
                "jax/output/SVG/autoload", "jax/output/SVG/fonts/TeX", "localization/en"],
    "requirejs": ["require.js"],
    "jquery": ["dist/jquery.min.js"],
    "@jupyter-widgets/html-manager": ["dist/embed-amd.js", "dist/libembed-amd.js"]
                                     + ["dist/*.woff2", "dist/*.woff", "dist/*.ttf",
                                        "dist/*.eot", "dist/*.svg"],
}
FONT_FOLDERS = ("@jupyter-widgets", "@jupyter-widgets/html-manager/dist")
MATHJAX_CONFIG = "TeX-AMS_SVG-full,Safe"
THEME = "white"
# Hosts the stock template loads from: none may be named in an offline deck.
CDN_HOSTS = ("unpkg.com", "cdnjs.cloudflare.com", "cdn.jsdelivr.net", "jsdelivr.net")


class DeckAssetsError(RuntimeError):
    """The deck's assets could not be installed (no npm, no registry)."""


def pinned_versions() -> dict:
    """Package name -> the exact version the deck uses (tools/deck_assets/package.json)."""
    return json.loads((ASSETS_PACKAGE / "package.json").read_text())["dependencies"]


def install(prefix: Path = Path("build/slides-assets")) -> Path:
    """Install the pinned packages into ``prefix`` with ``npm ci`` (skipped when the same
    lock file was installed there before); returns its node_modules folder."""
    prefix = Path(prefix)
    lock = (ASSETS_PACKAGE / "package-lock.json").read_text()
    installed_lock = prefix / "package-lock.json"
    node_modules = prefix / "node_modules"
    if node_modules.is_dir() and installed_lock.is_file() \
            and installed_lock.read_text() == lock:
        return node_modules
    npm = shutil.which("npm")
    if npm is None:
        raise DeckAssetsError(
            "npm was not found: the offline slides take reveal.js and MathJax from npm "
            "packages. Install Node.js (Debian/Ubuntu: `apt-get install npm`), or export "
            "slides that load them from CDNs with `python -m tools.slides export --online`.")
    prefix.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(ASSETS_PACKAGE / name, prefix / name)
    done = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund",
                           "--prefix", str(prefix)], capture_output=True, text=True)
    if done.returncode != 0:
        raise DeckAssetsError(f"npm ci failed in {prefix}:\n{done.stderr[-2000:]}")
    return node_modules


def copy_assets(node_modules: Path, output_dir: Path) -> Path:
    """Copy what the deck loads from ``node_modules`` to ``output_dir/assets``."""
    target_root = Path(output_dir) / ASSETS_DIR
    shutil.rmtree(target_root, ignore_errors=True)  # nothing left from other versions
    for package, parts in COPIED.items():
        version = json.loads((node_modules / package / "package.json").read_text())["version"]
        if version != pinned_versions()[package]:
            raise DeckAssetsError(f"{node_modules / package} is {package} {version}, the deck "
                                  f"pins {pinned_versions()[package]}: run npm ci again")
        for part in parts:
            sources = sorted((node_modules / package).glob(part))
            if not sources:
                raise DeckAssetsError(f"{package} {version} has no {part}")
            for source in sources:
                target = target_root / package / source.relative_to(node_modules / package)
                target.parent.mkdir(parents=True, exist_ok=True)
                if source.is_dir():
                    shutil.copytree(source, target, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("*.map"))
                else:
                    shutil.copy2(source, target)
    # The widget manager's bundle asks for its icon fonts relative to the page, not to
    # itself, at two places (measured in Chromium): put them there too.
    fonts = node_modules / "@jupyter-widgets/html-manager/dist"
    for folder in FONT_FOLDERS:
        shutil.rmtree(Path(output_dir) / folder.split("/")[0], ignore_errors=True)
    for folder in FONT_FOLDERS:
        (Path(output_dir) / folder).mkdir(parents=True, exist_ok=True)
        for pattern in ("*.woff2", "*.woff", "*.ttf", "*.eot", "*.svg"):
            for font in fonts.glob(pattern):
                shutil.copy2(font, Path(output_dir) / folder / font.name)
    return target_root


def template_options() -> dict:
    """SlidesExporter's arguments for the course's template (nbconvert's reveal.js slides
    without the mermaid import); given when the exporter is made, which reads them once."""
    return {"extra_template_basedirs": [str(TEMPLATES)], "template_name": TEMPLATE_NAME}


def configure(slides) -> None:
    """Point an nbconvert SlidesExporter at the copied assets (URLs relative to the HTML)."""
    slides.reveal_url_prefix = f"{ASSETS_DIR}/reveal.js"
    # nbconvert's default theme, "simple", imports its fonts from Google; "white" has its
    # own next to it.
    slides.reveal_theme = THEME
    slides.mathjax_url = f"{ASSETS_DIR}/mathjax/MathJax.js?config={MATHJAX_CONFIG}"
    slides.require_js_url = f"{ASSETS_DIR}/requirejs/require.js"
    slides.jquery_url = f"{ASSETS_DIR}/jquery/dist/jquery.min.js"
    slides.widget_renderer_url = f"{ASSETS_DIR}/@jupyter-widgets/html-manager/dist/embed-amd.js"


# A network URL as a script or style sheet writes one: a string, or CSS's url(...).
_REMOTE_IN_CODE = re.compile(r"(?:[\"'`]|url\(\s*)((?:https?:)?//[^\s\"'`)]+)")
_REMOTE = re.compile(r"(?:https?:)?//")


class _PageScanner(HTMLParser):
    """What a page loads, as the standard library's HTML parser reads it: the ``src`` and
    ``href`` attributes of its tags (``data-src``, ``xlink:href`` too) but a link's (``<a>``
    loads nothing until clicked), and the text of each of its scripts and style sheets.
    Comments are skipped."""

    def __init__(self):
        super().__init__()
        self.urls, self.code = [], []
        self._code_tag = None  # "script" or "style" while inside one

    def handle_starttag(self, tag, attrs):
        if tag != "a":
            self.urls += [value for name, value in attrs if value is not None
                          and name.replace(":", "-").rsplit("-", 1)[-1] in ("src", "href")]
        if tag in ("script", "style"):
            self._code_tag = tag
            self.code.append("")

    def handle_data(self, data):
        if self._code_tag is not None:
            self.code[-1] += data

    def handle_endtag(self, tag):
        if tag == self._code_tag:
            self._code_tag = None


def _scan(html: str) -> _PageScanner:
    scanner = _PageScanner()
    scanner.feed(html)
    scanner.close()
    return scanner


def loaded_urls(html: str) -> list:
    """The URLs in the page's tags that load something: ``src`` and ``href`` of every tag
    but a link."""
    return _scan(html).urls


def remote_urls(html: str) -> list:
    """Every URL on the network that the page would load: in a ``src`` or ``href`` of any
    tag but a link (``<a>`` loads nothing until clicked), or written in a script or a style
    sheet (a comment's URL aside); and any mention of a CDN host."""
    page = _scan(html)
    found = [url for url in page.urls if _REMOTE.match(url)]
    for body in page.code:
        found += _REMOTE_IN_CODE.findall(body)
    found += [host for host in CDN_HOSTS if host in html]
    return found
