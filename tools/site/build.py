"""Build the website: its source pages (pages.py), MathJax from the jupyter-server-mathjax
package, then Sphinx with MyST-NB and sphinx-book-theme (conf.py, and the theme's launch and
repository buttons for the course's public address), into one folder that works opened
from disk or from any static host. All of it installs with pip (the site extra)."""

import argparse
import io
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

from tools import course, links
from tools.site import pages

HERE = Path(__file__).resolve().parent
DEFAULT_OUTPUT = Path("build/site")
MATHJAX = "mathjax"  # its folder in _static (conf.py's mathjax_path)
MATHJAX_PACKAGE = "jupyter-server-mathjax"  # MathJax 2.7.9, the offline deck's version
# What the pages load of it (conf.py's configuration): the combined TeX configuration with
# the HTML-CSS output, the extensions it loads later, the STIX-Web fonts, English.
MATHJAX_PARTS = ["MathJax.js", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js",
                 "extensions", "jax/element", "jax/input/TeX", "jax/output/HTML-CSS",
                 "fonts/HTML-CSS", "localization/en"]
SOURCES = "_sources"  # where Sphinx copies each page's source, which the download button offers


class SiteBuildError(RuntimeError):
    """Sphinx reported warnings or errors: the site would have broken parts."""


def copy_mathjax(static_dir: Path) -> Path:
    """The parts of MathJax the pages load, from the jupyter-server-mathjax package,
    copied to ``static_dir/mathjax`` unless that package's version is there already."""
    from jupyter_server_mathjax.app import STATIC_ASSETS_PATH

    installed = f"{MATHJAX_PACKAGE} {version(MATHJAX_PACKAGE)}"
    target = static_dir / MATHJAX
    stamp = static_dir / f"{MATHJAX}.version"
    if stamp.is_file() and stamp.read_text() == installed and target.is_dir():
        return target
    shutil.rmtree(target, ignore_errors=True)
    for part in MATHJAX_PARTS:
        source = STATIC_ASSETS_PATH / part
        if not source.exists():
            raise SiteBuildError(f"{installed} has no MathJax file {part}")
        target.joinpath(part).parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target / part)
        else:
            shutil.copy2(source, target / part)
    stamp.write_text(installed)
    return target


def theme_options(address) -> dict:
    """sphinx-book-theme's repository button and its launch buttons (Binder, Colab and the
    JupyterHub, on each notebook's page) for the course at ``address``; none without one.
    The theme links a page to ``{path_to_docs}/{page}.ipynb`` in the repository: a notebook's
    page is at the site's root, its notebook in notebooks/."""
    if address is None:
        return {}
    launch = {"binderhub_url": links.BINDER, "colab_url": links.COLAB,
              "notebook_interface": "jupyterlab"}
    if address.hub:
        launch["jupyterhub_url"] = address.hub
    return {"repository_url": links.repo_url(address.repo),
            "repository_branch": address.ref, "path_to_docs": course.NOTEBOOK_DIR,
            "use_repository_button": True, "launch_buttons": launch}


def offer_notebooks(output_dir: Path, names=None) -> None:
    """The download button of a notebook's page offers Sphinx's copy of the page's source,
    which leaves out the lecturer's notes and the live widgets: put the course's notebook
    there, the one the launch buttons open."""
    for entry in course.notebooks():
        if names is None or entry.name in names:
            shutil.copy2(course.ROOT / entry.path, output_dir / SOURCES / f"{entry.name}.ipynb")


def build(output_dir: Path = DEFAULT_OUTPUT, address=None, names=None,
          cache_dir: Path = None) -> Path:
    """Write the website to ``output_dir`` and return its home page. ``address`` (a
    ``pages.Address``) gives the notebook pages the theme's launch buttons, None says how
    to run them locally; ``names`` builds those notebooks only. Sources, Sphinx's cache and
    MathJax stay in ``cache_dir`` (default: ``output_dir`` with ``-cache`` added), so that
    a second build redoes only what changed."""
    from sphinx.application import Sphinx
    from sphinx.errors import SphinxError
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    output_dir = Path(output_dir).resolve()
    cache_dir = Path(cache_dir or output_dir.with_name(output_dir.name + "-cache")).resolve()
    static_dir = cache_dir / "static"
    copy_mathjax(static_dir)
    source_dir = cache_dir / "source"
    pages.write_sources(source_dir, address, names)
    html_dir = cache_dir / "html"  # MyST-NB writes pictures next to it, in jupyter_execute
    overrides = {"html_static_path": [str(HERE / "static"), str(static_dir)]}
    overrides.update({f"html_theme_options.{key}": value
                      for key, value in theme_options(address).items()})
    warnings = io.StringIO()
    try:
        with patch_docutils(HERE), docutils_namespace():
            sphinx = Sphinx(source_dir, HERE, html_dir, cache_dir / "doctrees", "html",
                            confoverrides=overrides, status=None, warning=warnings,
                            warningiserror=True)
            sphinx.build()
    except SphinxError as error:
        raise SiteBuildError(f"Sphinx failed: {error}\n{warnings.getvalue()}") from error
    if sphinx.statuscode != 0:
        raise SiteBuildError(f"Sphinx failed (exit status {sphinx.statuscode}):\n"
                             f"{warnings.getvalue()}")
    shutil.rmtree(output_dir, ignore_errors=True)
    shutil.copytree(html_dir, output_dir, ignore=shutil.ignore_patterns(".buildinfo"))
    offer_notebooks(output_dir, names)
    return output_dir / "index.html"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.site",
        description="Build the course's website from the notebooks' stored outputs: a folder "
                    "that works opened from disk. Launch links use the address of the "
                    "README's launch links (python -m tools.links OWNER/REPO --write), or "
                    "--repo.")
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--repo", help="OWNER/NAME on GitHub (default: the README's)")
    parser.add_argument("--ref", default=None, help="branch or tag (default: the README's, "
                                                    "else main)")
    parser.add_argument("--hub", help="a JupyterHub's address, for nbgitpuller links")
    parser.add_argument("--notebook", action="append", metavar="NAME",
                        choices=[entry.name for entry in course.notebooks()],
                        help="build this notebook's page only (repeat for more), e.g. "
                             "02_causal_masking: a quick look at one page")
    args = parser.parse_args(argv)
    readme = (course.ROOT / "README.md").read_text(encoding="utf-8")
    try:
        published = pages.readme_address(readme)
        repo = args.repo or (published.repo if published else None)
        if repo is None and args.hub:
            parser.error("--hub needs the course's public address: give --repo OWNER/NAME")
        ref = args.ref or (published.ref if published and not args.repo else "main")
        address = pages.Address(repo, ref, args.hub) if repo else None
    except ValueError as error:
        parser.error(str(error))
    try:
        home = build(args.output_dir, address, names=args.notebook)
    except (SiteBuildError, ValueError) as error:
        print(error, file=sys.stderr)
        return 1
    print(f"The website is in {args.output_dir}/: open {home}")
    return 0
