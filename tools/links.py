"""Launch links for every notebook: Binder, Colab and a JupyterHub (nbgitpuller).

    python -m tools.links OWNER/REPO [--ref main] [--hub https://hub.example.org]
    python -m tools.links OWNER/REPO --write   # rewrite the README's links and the
                                               # notebooks' Colab setup cells

Binder keeps the environment apart from the content, as nbgitpuller's link generator
does: the image is built from the commit that last changed environment.yml or postBuild
(so Binder builds it again only when the dependencies change), and the link's urlpath makes
nbgitpuller pull the course from the branch (``--ref``, default main) into that image and
open the notebook in JupyterLab. Colab opens the notebook straight from GitHub, and the
notebook's first code cell (tagged colab-setup) fetches the course there (see
``colab_setup_source``); on a JupyterHub nbgitpuller clones (or updates) the repository
into the user's home and opens the notebook there. Wherever the course was pulled, the
same first cell finds its helpers one folder up. Without OWNER/REPO, the git remote's is
used; with no public address at all, ``--write`` says so in the README, and the setup
cells use a copy of the course on Colab or ask for its zip (``make zip``).
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

import nbformat

from tools.course import notebook_paths
from tools.course_zip import COURSE_FOLDER

ROOT = Path(__file__).resolve().parents[1]
README_START, README_END = "<!-- launch-links:start -->", "<!-- launch-links:end -->"
REPO_PATTERN = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
COLAB_SETUP_TAG = "colab-setup"
COLAB_CONTENT = "/content"  # Colab's working folder, where uploads land
COLAB_COURSE_DIR = f"{COLAB_CONTENT}/{COURSE_FOLDER}"
# Where the course is published and opened live (the website's launch buttons use them too).
GITHUB = "https://github.com"
BINDER = "https://mybinder.org"
COLAB = "https://colab.research.google.com"
# What Binder's image is built from, at the top level of the repository (repo2docker reads
# them there when the repository has no binder/ folder; tests/test_packaging.py checks
# that it holds no other file repo2docker builds from).
ENVIRONMENT_FILES = ("environment.yml", "postBuild")
COMMIT_PATTERN = re.compile(r"[0-9a-f]{7,40}")


def _check_repo(repo: str) -> str:
    if not REPO_PATTERN.fullmatch(repo or ""):
        raise ValueError(f"repo must be GitHub's OWNER/NAME, e.g. someone/causal-attention, "
                         f"got {repo!r}")
    return repo


def repo_url(repo: str) -> str:
    """The course's repository on GitHub."""
    return f"{GITHUB}/{_check_repo(repo)}"


def binder_url(repo: str, path: str, ref: str = "main") -> str:
    """Binder builds the image from ``repo`` at ``ref`` and opens ``path`` of that same
    checkout (the form sphinx-book-theme's launch button uses; see ``binder_pull_url`` for
    the links the README gives)."""
    _check_repo(repo)
    return f"{BINDER}/v2/gh/{repo}/{quote(ref, safe='')}?urlpath=lab/tree/{path}"


def binder_pull_url(repo: str, path: str, environment_ref: str, ref: str = "main",
                    url: str = None) -> str:
    """Binder builds (or reuses) the image of ``repo`` at ``environment_ref`` (the commit
    that last changed the environment, see ``environment_ref``), then nbgitpuller pulls the course
    from branch ``ref`` into the learner's home and opens ``path`` there in JupyterLab: the
    form of nbgitpuller's link generator for Binder. Binder's ``labpath`` opens a file
    already in the image, so the pull goes in ``urlpath``, as its own query, encoded."""
    _check_repo(repo)
    if not environment_ref or "/" in environment_ref:
        raise ValueError(f"environment_ref must be a commit (or a branch or tag) of {repo}, "
                         f"got {environment_ref!r}")
    pull = git_pull_query(repo, path, ref, url)
    return (f"{BINDER}/v2/gh/{repo}/{quote(environment_ref, safe='')}?"
            + urlencode({"urlpath": f"git-pull?{pull}"}))


def colab_url(repo: str, path: str, ref: str = "main") -> str:
    _check_repo(repo)
    return f"{COLAB}/github/{repo}/blob/{ref}/{path}"


def pull_folder(repo: str) -> str:
    """The folder of the learner's home that nbgitpuller clones ``repo`` into: the last
    part of the repository's address, its name."""
    return _check_repo(repo).split("/")[1]


def git_pull_query(repo: str, path: str, ref: str = "main", url: str = None) -> str:
    """nbgitpuller's query: clone (or update) ``repo`` at branch ``ref`` into the learner's
    home, then open ``path`` in JupyterLab. ``url`` replaces GitHub's address of ``repo``
    (tests use a local repository); the clone's folder is its last part, ``repo``'s name."""
    name = pull_folder(repo)
    if COMMIT_PATTERN.fullmatch(ref):
        raise ValueError(f"nbgitpuller pulls a branch (or tag), not a commit; got ref {ref!r}")
    url = url or repo_url(repo)
    if url.split("/")[-1] != name:  # as nbgitpuller's handler names the folder
        raise ValueError(f"url must end in the repository's name {name!r} (nbgitpuller names "
                         f"the clone's folder after its last part), got {url!r}")
    return urlencode({"repo": url, "branch": ref, "urlpath": f"lab/tree/{name}/{path}"})


def nbgitpuller_url(hub: str, repo: str, path: str, ref: str = "main", url: str = None) -> str:
    """A link that makes the hub clone (or update) the course in the learner's home and
    open ``path`` in JupyterLab there (see ``git_pull_query``)."""
    _check_repo(repo)
    if not re.match(r"https?://", hub or ""):
        raise ValueError(f"hub must be the hub's address starting with https://, got {hub!r}")
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{git_pull_query(repo, path, ref, url)}"


def _git(root: Path, *args) -> str:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as error:
        raise ValueError(f"git {' '.join(args)} failed in {root}: "
                         f"{getattr(error, 'stderr', '') or error}") from None


ENVIRONMENT_NAMES = " or ".join(ENVIRONMENT_FILES)


def environment_ref(root: Path = ROOT) -> str:
    """The commit that last changed environment.yml or postBuild in ``root``'s history
    (``git log -1 -- environment.yml postBuild``): Binder's links build the image from it,
    so Binder reuses one image until the dependencies change. Raises ValueError when
    either file has changes not yet committed (no link can name them)."""
    if _git(root, "status", "--porcelain", "--", *ENVIRONMENT_FILES):
        raise ValueError(f"{ENVIRONMENT_NAMES} has changes not committed: commit them "
                         "first, the Binder links name the commit that last changed them")
    commit = _git(root, "log", "-1", "--format=%H", "--", *ENVIRONMENT_FILES)
    if not commit:
        raise ValueError(f"no commit of {root} has an {ENVIRONMENT_NAMES}")
    return commit


def environment_problem(commit: str, root: Path = ROOT):
    """None when environment.yml and postBuild at ``commit`` are those of ``root``'s HEAD
    and work tree (the same blobs, the same modes), so the image Binder builds from
    ``commit`` is the environment the course has now; else what differs."""
    try:
        _git(root, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    except ValueError:
        return (f"the Binder links build from {commit}, which is not a commit of this "
                f"repository")
    then = _git(root, "ls-tree", commit, "--", *ENVIRONMENT_FILES)
    now = _git(root, "ls-tree", "HEAD", "--", *ENVIRONMENT_FILES)
    changed = _git(root, "status", "--porcelain", "--", *ENVIRONMENT_FILES)
    if then != now or changed:
        return (f"{ENVIRONMENT_NAMES} changed after {commit}, which the Binder links build "
                f"from: run `python -m tools.links OWNER/REPO --write` again")
    return None


def colab_setup_source(repo: str = None, ref: str = "main",
                       course_dir: str = COLAB_COURSE_DIR, url: str = None,
                       content: str = COLAB_CONTENT) -> str:
    """The first code cell of every notebook. Wherever the notebook sits in the course's
    folder (a clone, a hub, Binder, a download), it finds ``course_setup.py`` one folder
    up; opened alone (on Colab), it fetches the course from GitHub's ``repo`` at ``ref``
    (a branch, a tag or a commit: clone, then check out) into ``course_dir``, and says in
    one sentence when that fails. With no ``repo`` (the course has no public address yet),
    it uses a copy of the course already on Colab (a folder holding ``course_setup.py``
    and ``helpers/`` in ``content``, one or two levels down, or in the Google Drive
    mounted there), the newest if there are several (naming the others); with none, on
    Colab it asks for the course's zip (``make zip``, tools/course_zip.py) with
    ``google.colab.files.upload()``, unzips each zip uploaded into a new folder of its own
    and uses that, and it says how Google Drive spares an upload per notebook; elsewhere
    it says to open the notebook from the unzipped course. Standard library only (it runs
    before ``helpers`` can be imported). Then ``course_setup.ready()`` makes ``helpers``
    importable and checks the packages. ``url`` replaces GitHub's address and ``content``
    Colab's /content (tests use a local repository and a temporary folder)."""
    if repo is not None:
        _check_repo(repo)
        url = url or repo_url(repo)
    if url is None:
        opened_alone = "opened alone: find the course (no public address yet)"
        fetch = f"""\
    import glob
    import io
    import tempfile
    import zipfile

    def copies():  # folders holding course_setup.py and helpers/: uploaded, or in Drive
        return sorted(os.path.dirname(path) for where in ("*", "*/*", "drive/MyDrive/*")
                      for path in glob.glob(f"{content}/{{where}}/course_setup.py")
                      if os.path.isdir(os.path.join(os.path.dirname(path), "helpers")))

    on_colab = "google.colab" in sys.modules
    if on_colab and not copies():
        from google.colab import files
        print("No copy of the course in {content} or in Google Drive: choose the course's "
              "zip ({COURSE_FOLDER}.zip, from your lecturer) below.\\n"
              "Tip: on Colab each notebook has its own runtime, so this upload serves "
              "this notebook only. To upload once for all notebooks, put the unzipped "
              "course folder in your Google Drive (MyDrive) and run  from google.colab "
              "import drive; drive.mount('{content}/drive')  in a cell before this one.")
        for data in files.upload().values():  # each zip into a new folder of its own
            if zipfile.is_zipfile(io.BytesIO(data)):
                folder = tempfile.mkdtemp(prefix="upload-", dir="{content}")
                zipfile.ZipFile(io.BytesIO(data)).extractall(folder)
    found = copies()
    if not found and on_colab:
        raise RuntimeError("The upload held no copy of the course (a folder with "
                           "course_setup.py and helpers/): run this cell again and choose "
                           "{COURSE_FOLDER}.zip.") from None
    if not found:
        raise RuntimeError("This notebook needs the whole course (no public address yet): "
                           "unzip {COURSE_FOLDER}.zip, from your lecturer, and "
                           "open the notebook from its notebooks folder.") from None
    course = max(found, key=lambda folder: os.path.getmtime(f"{{folder}}/course_setup.py"))
    print(f"Using the course in {{course}}")
    if len(found) > 1:
        others = ", ".join(folder for folder in found if folder != course)
        print(f"  the newest of {{len(found)}} copies; the others: {{others}}")
    sys.path.insert(0, course)
    import course_setup"""
    else:
        opened_alone = "this notebook was opened alone (on Colab): fetch the course"
        fetch = f"""\
    !test -d {course_dir} || GIT_TERMINAL_PROMPT=0 git clone --quiet {url} {course_dir} \
&& git -C {course_dir} checkout --quiet {ref}
    if not os.path.isfile("{course_dir}/course_setup.py"):
        raise RuntimeError("Could not fetch the course from "
                           "{url} (git says why just above): check that "
                           "this runtime is online and the repository is public, then run "
                           "this cell again.") from None
    sys.path.insert(0, "{course_dir}")
    import course_setup"""
    return f"""\
# Setup: run this cell first, wherever this notebook is open (Colab, a JupyterHub, Binder,
# your own machine). It finds the course's helpers and checks the packages they need.
import os
import sys

sys.path.insert(0, os.path.dirname(os.getcwd()))  # the course: one folder up from here
try:
    import course_setup
except ModuleNotFoundError:  # {opened_alone}
{fetch}
course_setup.ready()"""


def colab_setup_cells(notebook: dict) -> list:
    """The notebook's cells tagged colab-setup (one, in a course notebook)."""
    return [cell for cell in notebook["cells"]
            if COLAB_SETUP_TAG in cell.get("metadata", {}).get("tags", [])]


def rewrite_colab_setup(path: Path, repo, ref: str = "main") -> None:
    """Point the notebook's setup cell at repo and ref (repo None: no public address yet);
    everything else unchanged."""
    notebook = nbformat.read(path, as_version=4)
    cells = colab_setup_cells(notebook)
    if len(cells) != 1:
        raise ValueError(f"{path.name} should have one cell tagged {COLAB_SETUP_TAG}, "
                         f"found {len(cells)}")
    cells[0]["source"] = colab_setup_source(repo, ref)
    nbformat.write(notebook, path)


def links(repo: str, ref: str = "main", hub: str = None, root: Path = ROOT) -> list:
    """One dict per notebook: its path and its launch links. For a branch or tag, Binder's
    image comes from the commit that last changed the environment (``environment_ref``)
    and the course from ``ref``
    (``binder_pull_url``); a commit gives a link that builds and opens that commit alone."""
    if COMMIT_PATTERN.fullmatch(ref):
        environment = None
    else:
        environment = environment_ref(root)
        if (root / pull_folder(repo)).exists():
            raise ValueError(f"nbgitpuller would pull the course into the image's "
                             f"{pull_folder(repo)}/, which the repository already has")
    rows = []
    for path in notebook_paths():
        binder = (binder_url(repo, path, ref) if environment is None
                  else binder_pull_url(repo, path, environment, ref))
        row = {"notebook": path, "binder": binder, "colab": colab_url(repo, path, ref)}
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


def readme_environment_refs(readme: str) -> set:
    """The commits (or refs) that the README's Binder links build their image from."""
    return set(re.findall(r"mybinder\.org/v2/gh/[^/\s]+/[^/\s]+/([^/?\s)]+)\?urlpath=git-pull",
                          readme))


def readme_repo_and_ref(readme: str):
    """(OWNER/NAME, ref) that the README's launch links use, as ``--write`` wrote them, or
    None when the course has no public address yet (the block holds NO_ADDRESS_NOTE)."""
    if README_START not in readme or README_END not in readme:
        raise ValueError(f"the README has no {README_START} ... {README_END} block")
    block = readme.split(README_START, 1)[1].split(README_END, 1)[0]
    found = re.search(r"colab\.research\.google\.com/github/([^/\s]+/[^/\s]+)/blob/([^/\s]+)/",
                      block)
    if found is None:
        if NO_ADDRESS_NOTE not in block:
            raise ValueError("README.md's launch-link block holds neither launch links nor "
                             "the note for a course without a public address")
        return None
    return found.group(1), found.group(2)


def repo_from_git_remote(root: Path = ROOT):
    """OWNER/NAME of the course's GitHub remote (``origin``), or None if it has none."""
    try:
        url = subprocess.run(["git", "-C", str(root), "remote", "get-url", "origin"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    match = re.search(r"github\.com[:/]([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(\.git)?/?$", url)
    return match.group(1) if match else None


NO_ADDRESS_NOTE = ("The launch links (Binder, Colab, JupyterHub) appear here once the course "
                   "has a public address:\n`python -m tools.links OWNER/REPO --write`.")


def write_links(repo, ref: str = "main", hub: str = None, root: Path = ROOT,
                paths=None) -> int:
    """Rewrite the README's link block and the setup cell of every notebook (or of
    ``paths``, relative to ``root``) for ``repo`` (None: the course has no public address
    yet); returns how many notebooks were rewritten."""
    readme = root / "README.md"
    block = readme_table(links(repo, ref, hub, root)) if repo else NO_ADDRESS_NOTE
    readme.write_text(rewrite_readme(readme.read_text(encoding="utf-8"), block),
                      encoding="utf-8")
    paths = notebook_paths() if paths is None else paths
    for path in paths:
        rewrite_colab_setup(root / path, repo, ref)
    return len(paths)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.links", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", nargs="?",
                        help="the course's GitHub repository, OWNER/NAME (default: the git "
                             "remote origin's, if it is on GitHub)")
    parser.add_argument("--ref", default="main",
                        help="the branch or tag that Binder and the hub pull the course from "
                             "(default: main); a commit gives Binder links that build and open "
                             "that commit alone")
    parser.add_argument("--hub", help="a JupyterHub's address, for nbgitpuller links")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the link table in README.md and the notebooks' Colab "
                             "setup cells instead of printing")
    args = parser.parse_args(argv)
    repo = args.repo or repo_from_git_remote()
    if repo is None and not args.write:
        parser.error("no repository given and no GitHub remote found: give OWNER/NAME")
    try:
        rows = links(repo, args.ref, args.hub) if repo else []
        if args.write:
            count = write_links(repo, args.ref, args.hub)
            print(f"rewrote the launch links in README.md and the setup cells of {count} "
                  f"notebooks" + ("" if repo else " (no public address: no links)"))
            return 0
    except ValueError as error:
        parser.error(str(error))
    if rows and "git-pull" in rows[0]["binder"]:
        print(f"Binder's image: {environment_ref()} (the last change of "
              f"{ENVIRONMENT_NAMES}); the course: {args.ref}")
    for row in rows:
        print(row["notebook"])
        for key, url in row.items():
            if key != "notebook":
                print(f"  {key:10s} {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
