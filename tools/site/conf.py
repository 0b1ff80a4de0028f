"""Sphinx's configuration for the course's website (tools/site/build.py runs Sphinx with
it on the pages tools/site/pages.py writes). Everything a page loads is in the built
folder: no CDN, so that it works opened from disk with no network."""

from pathlib import Path

HERE = Path(__file__).resolve().parent

project = "Causal self-attention, step by step"
author = "the course's authors"
language = "en"
extensions = ["myst_nb"]
root_doc = "index"
exclude_patterns = []

# The notebooks as committed: their stored outputs, never executed again.
nb_execution_mode = "off"
# No widget manager and no require.js from a CDN: the pages hold no live widget (each is
# replaced by its static picture and a line saying it is live in Jupyter).
nb_ipywidgets_js = {}
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# MathJax 2.7.9 (the offline deck's version) from the jupyter-server-mathjax package, copied
# into _static/mathjax by the build. That package ships the HTML-CSS output with the STIX-Web
# fonts only (no SVG output, no TeX fonts): MathJax is told to use those fonts, from the
# built folder.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
# MyST-NB marks each notebook's sections tex2jax_ignore (so that a "$" in an output is not
# read as maths), and Sphinx wraps each formula in class "math": MathJax 2 is told both.
# MyST's own MathJax settings are for MathJax 3 and left out.
myst_update_mathjax = False
mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]],
                               "displayMath": [["\\[", "\\]"]],
                               "processEscapes": False, "processEnvironments": False,
                               "ignoreClass": "tex2jax_ignore|mathjax_ignore",
                               "processClass": "tex2jax_process|mathjax_process|math"},
                   # Its placeholder font is at about:blank, which a page from disk may
                   # not load (Chromium reports an error): a local name loads nothing.
                   "HTML-CSS": {"availableFonts": [], "preferredFont": None,
                                "webFont": "STIX-Web", "imageFont": None,
                                "styles": {"@font-face": {"font-family": "MathJax_Blank",
                                                          "src": "local('MathJax_Blank')"}}},
                   # The hidden MathML for screen readers would ask for MathJax's TeX fonts,
                   # which the package does not ship: it is never seen, any font will do.
                   "AssistiveMML": {"styles": {".MJX_Assistive_MathML *": {
                       "font-family": "inherit !important"}}},
                   "showMathMenu": False, "messageStyle": "none"}

html_theme = "sphinx_book_theme"
html_title = project
html_static_path = [str(HERE / "static")]  # the build adds MathJax's folder
html_css_files = ["course.css"]
# Sphinx's copy of each page's source, in _sources: what the theme's download button offers
# (for a notebook's page, the build puts the course's notebook there).
html_copy_source = True
html_show_sourcelink = False
# Search from disk: the search index is a script, loaded as such; a result's summary would
# be fetched with fetch(), which a page opened from disk may not do.
html_show_search_summary = False
# Sphinx's search scores a word in a page's title like one in any of its headings, and
# a page by its best word only: "padding mask" ties notebook 2 ("masking" in its title,
# "padding" in its text) with notebook 6 ("Padding masks"). The scorer ranks a page or
# section whose title holds the whole query first (Sphinx's documented hook).
html_search_scorer = str(HERE / "search_scorer.js")
# The repository button and each notebook's launch buttons need the course's public
# address: build.py adds them (build.theme_options) when it has one.
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
    # One search box: the parent theme (pydata-sphinx-theme) adds a header bar holding a
    # second search field unless navbar_persistent is given. Without it, the sidebar's
    # field searches on a wide screen, the page header's button on a phone.
    "navbar_persistent": [],
}
# Light or dark as the reader's system says, until they pick one (the theme's documented
# setting; left empty, its script reports an error on a first visit).
html_context = {"default_mode": "auto"}
html_last_updated_fmt = None
