"""Launch links for every notebook: Binder, Colab and a JupyterHub (nbgitpuller).

    python -m helpers.links OWNER/REPO [--ref main] [--hub https://hub.example.org]
    python -m helpers.links OWNER/REPO --write   # rewrite the README's links and the
                                                 # notebooks' Colab setup cells

Binder opens the notebook in JupyterLab, built from environment.yml and postBuild; Colab
opens it straight from GitHub, and the notebook's first code cell (tagged colab-setup)
clones the repository there and installs helpers; nbgitpuller clones (or updates) the
repository into the user's home on a JupyterHub and opens the notebook there.
"""

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

import nbformat

ROOT = Path(__file__).resolve().parents[1]
README_START, README_END = "<!-- launch-links:start -->", "<!-- launch-links:end -->"
REPO_PATTERN = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
COLAB_SETUP_TAG = "colab-setup"
COLAB_COURSE_DIR = "/content/causal-attention-course"


def notebook_paths(root: Path = ROOT) -> list:
    """The course notebooks, relative to the repository root, in order."""
    return [p.relative_to(root).as_posix()
            for p in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))]


def _check_repo(repo: str) -> str:
    if not REPO_PATTERN.fullmatch(repo or ""):
        raise ValueError(f"repo must be GitHub's OWNER/NAME, e.g. someone/causal-attention, "
                         f"got {repo!r}")
    return repo


def binder_url(repo: str, path: str, ref: str = "main") -> str:
    _check_repo(repo)
    return f"https://mybinder.org/v2/gh/{repo}/{quote(ref, safe='')}?urlpath=lab/tree/{path}"


def colab_url(repo: str, path: str, ref: str = "main") -> str:
    _check_repo(repo)
    return f"https://colab.research.google.com/github/{repo}/blob/{ref}/{path}"


def nbgitpuller_url(hub: str, repo: str, path: str, ref: str = "main") -> str:
    _check_repo(repo)
    if not re.match(r"https?://", hub or ""):
        raise ValueError(f"hub must be the hub's address starting with https://, got {hub!r}")
    name = repo.split("/")[1]
    query = urlencode({"repo": f"https://github.com/{repo}", "branch": ref,
                       "urlpath": f"lab/tree/{name}/{path}"})
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def colab_setup_source(repo: str, ref: str = "main") -> str:
    """The first code cell of every notebook: on Colab, clone the course (once), install
    helpers from it and work in its notebooks folder (so ``%load ../solutions/...`` works);
    anywhere else, nothing. ``--no-deps``: Colab already has torch, numpy, matplotlib and
    ipywidgets, and must not get a second torch or a JupyterLab."""
    _check_repo(repo)
    return f"""\
# On Google Colab: fetch the course and install its helpers. Anywhere else: nothing.
import sys

if "google.colab" in sys.modules:
    import os

    from google.colab import output

    COURSE = "{COLAB_COURSE_DIR}"
    if not os.path.isdir(COURSE):
        !git clone --quiet --depth 1 --branch {ref} https://github.com/{repo} {{COURSE}}
        %pip install --quiet --no-deps {{COURSE}}
    %cd {{COURSE}}/notebooks
    output.enable_custom_widget_manager()  # Colab shows ipywidgets only with this"""


def colab_setup_cells(notebook: dict) -> list:
    """The notebook's cells tagged colab-setup (one, in a course notebook)."""
    return [cell for cell in notebook["cells"]
            if COLAB_SETUP_TAG in cell.get("metadata", {}).get("tags", [])]


def rewrite_colab_setup(path: Path, repo: str, ref: str = "main") -> None:
    """Point the notebook's colab-setup cell at repo and ref; everything else unchanged."""
    notebook = nbformat.read(path, as_version=4)
    cells = colab_setup_cells(notebook)
    if len(cells) != 1:
        raise ValueError(f"{path.name} should have one cell tagged {COLAB_SETUP_TAG}, "
                         f"found {len(cells)}")
    cells[0]["source"] = colab_setup_source(repo, ref)
    nbformat.write(notebook, path)


def links(repo: str, ref: str = "main", hub: str = None, root: Path = ROOT) -> list:
    """One dict per notebook: its path and its launch links."""
    rows = []
    for path in notebook_paths(root):
        row = {"notebook": path, "binder": binder_url(repo, path, ref),
               "colab": colab_url(repo, path, ref)}
        if hub:
            row["jupyterhub"] = nbgitpuller_url(hub, repo, path, ref)
        rows.append(row)
    return rows


def readme_table(rows: list) -> str:
    """A markdown table of badges, one row per notebook."""
    badges = {
        "binder": "[![Binder](https://mybinder.org/badge_logo.svg)]({})",
        "colab": "[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]({})",
        "jupyterhub": "[JupyterHub]({})",
    }
    columns = [key for key in ("binder", "colab", "jupyterhub") if key in rows[0]]
    lines = ["| notebook | " + " | ".join(columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for row in rows:
        name = Path(row["notebook"]).stem
        cells = [badges[key].format(row[key]) for key in columns]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rewrite_readme(text: str, table: str) -> str:
    """The README text with the block between the launch-link markers replaced."""
    if README_START not in text or README_END not in text:
        raise ValueError(f"the README has no {README_START} ... {README_END} block to rewrite")
    before, rest = text.split(README_START, 1)
    _, after = rest.split(README_END, 1)
    return f"{before}{README_START}\n{table}\n{README_END}{after}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.links", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", help="the course's GitHub repository, OWNER/NAME")
    parser.add_argument("--ref", default="main", help="branch, tag or commit (default: main)")
    parser.add_argument("--hub", help="a JupyterHub's address, for nbgitpuller links")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the link table in README.md and the notebooks' Colab "
                             "setup cells instead of printing")
    args = parser.parse_args(argv)
    try:
        rows = links(args.repo, args.ref, args.hub)
    except ValueError as error:
        parser.error(str(error))
    if args.write:
        readme = ROOT / "README.md"
        readme.write_text(rewrite_readme(readme.read_text(encoding="utf-8"), readme_table(rows)),
                          encoding="utf-8")
        for row in rows:
            rewrite_colab_setup(ROOT / row["notebook"], args.repo, args.ref)
        print(f"rewrote the launch links in {readme.name} and the Colab setup cells of "
              f"{len(rows)} notebooks")
        return 0
    for row in rows:
        print(row["notebook"])
        for key, url in row.items():
            if key != "notebook":
                print(f"  {key:10s} {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
