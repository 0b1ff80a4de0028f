"""Launch links for every notebook: Binder, Colab and a JupyterHub (nbgitpuller).

    python -m helpers.links OWNER/REPO [--ref main] [--hub https://hub.example.org]
    python -m helpers.links OWNER/REPO --write-readme     # rewrite the README's link table

Binder opens the notebook in JupyterLab, built from environment.yml and postBuild; Colab
opens it straight from GitHub; nbgitpuller clones (or updates) the repository into the
user's home on a JupyterHub and opens the notebook there.
"""

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[1]
README_START, README_END = "<!-- launch-links:start -->", "<!-- launch-links:end -->"
REPO_PATTERN = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


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
    parser.add_argument("--write-readme", action="store_true",
                        help="rewrite the link table in README.md instead of printing")
    args = parser.parse_args(argv)
    try:
        rows = links(args.repo, args.ref, args.hub)
    except ValueError as error:
        parser.error(str(error))
    if args.write_readme:
        readme = ROOT / "README.md"
        readme.write_text(rewrite_readme(readme.read_text(encoding="utf-8"), readme_table(rows)),
                          encoding="utf-8")
        print(f"rewrote the launch links in {readme.name} for {len(rows)} notebooks")
        return 0
    for row in rows:
        print(row["notebook"])
        for key, url in row.items():
            if key != "notebook":
                print(f"  {key:10s} {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
