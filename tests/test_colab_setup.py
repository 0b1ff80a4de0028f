"""The first code cell of every notebook: the course found beside the notebook, fetched
on Colab (from a local repository standing in for GitHub, at a branch, a tag or a
commit), or a clear sentence when it cannot be."""

import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from tools.links import (
    NO_ADDRESS_NOTE,
    ROOT,
    colab_setup_cells,
    colab_setup_source,
    notebook_paths,
    rewrite_colab_setup,
)


def readme_repo_and_ref():
    """The repository and ref the README's Colab links use, or (None, "main") when the
    course has no public address yet."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/", readme)
    if match is None:
        assert NO_ADDRESS_NOTE in readme
        return None, "main"
    return match.groups()


@pytest.mark.parametrize("path", notebook_paths())
def test_first_code_cell_is_the_setup_for_the_readme_repo(path):
    notebook = nbformat.read(ROOT / path, as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert colab_setup_cells(notebook) == [code_cells[0]]
    assert code_cells[0].source == colab_setup_source(*readme_repo_and_ref()), (
        "regenerate with: python -m tools.links [OWNER/REPO] --write")
    assert code_cells[0].metadata["slideshow"]["slide_type"] == "skip"


class Shell:
    """Runs what the cell asks IPython to run: ``!`` lines in a real shell, with {name}
    expanded from the cell's variables as IPython does."""

    def __init__(self):
        self.commands, self.namespace = [], {"get_ipython": lambda: self}

    def system(self, command):
        command = command.format(**self.namespace)
        self.commands.append(command)
        subprocess.run(command, shell=True, check=False)

    def run_line_magic(self, name, line, _stack_depth=None):
        raise AssertionError(f"the setup cell should need no %{name}")


@pytest.fixture
def isolated(monkeypatch):
    """The import path, the working folder and imported course modules restored after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "course_setup", raising=False)
    monkeypatch.chdir(ROOT)
    yield monkeypatch
    sys.modules.pop("course_setup", None)


def run_cell(source: str, *, on_colab: bool, monkeypatch):
    if on_colab:
        monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    shell = Shell()
    exec(TransformerManager().transform_cell(source), shell.namespace)
    return shell


def test_in_the_course_folder_the_cell_finds_the_course_and_fetches_nothing(isolated, capsys):
    isolated.chdir(ROOT / "notebooks")
    shell = run_cell(colab_setup_source("ann/course", "v2"), on_colab=False,
                     monkeypatch=isolated)
    assert shell.commands == []
    assert sys.modules["course_setup"].COURSE_ROOT == ROOT
    assert "Course ready" in capsys.readouterr().out


@pytest.fixture(scope="module")
def stand_in_for_github(tmp_path_factory):
    """A bare repository holding the course's setup module, helpers and notebooks, with a
    branch, a tag and a later commit: {"url", "branch", "tag", "commit"} and the commit
    each ref points to."""
    work = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "course_setup.py", work)
    shutil.copytree(ROOT / "helpers", work / "helpers",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (work / "notebooks").mkdir()
    (work / "notebooks" / "01_lesson.ipynb").write_text("{}")

    def git(*args, cwd=work):
        return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    first = git("rev-parse", "HEAD")
    git("tag", "v1")
    git("checkout", "-q", "-b", "lesson-fixes")
    (work / "notebooks" / "marker.txt").write_text("fixes")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "second")
    second = git("rev-parse", "HEAD")
    git("checkout", "-q", "main")
    bare = tmp_path_factory.mktemp("github") / "course.git"
    git("clone", "-q", "--bare", str(work), str(bare), cwd=work.parent)
    return {"url": bare.as_uri(), "refs": {"lesson-fixes": second, "v1": first,
                                           first[:12]: first, second: second}}


@pytest.mark.parametrize("kind", ["branch", "tag", "short commit", "commit"])
def test_on_colab_the_cell_fetches_the_course_at_a_branch_tag_or_commit(
        kind, stand_in_for_github, isolated, tmp_path, capsys):
    ref = list(stand_in_for_github["refs"])[["branch", "tag", "short commit",
                                             "commit"].index(kind)]
    clone = tmp_path / "content" / "course"
    isolated.chdir(tmp_path)  # Colab starts in /content, with nothing of the course
    fresh_path = [p for p in sys.path if p not in ("", str(ROOT))]
    isolated.setattr(sys, "path", list(fresh_path))
    source = colab_setup_source("ann/course", ref, course_dir=str(clone),
                                url=stand_in_for_github["url"])
    shell = run_cell(source, on_colab=True, monkeypatch=isolated)
    assert len(shell.commands) == 1, sys.modules["course_setup"].__file__
    assert "GIT_TERMINAL_PROMPT=0" in shell.commands[0]
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    assert head == stand_in_for_github["refs"][ref]
    assert sys.modules["course_setup"].COURSE_ROOT == clone
    assert Path.cwd() == clone / "notebooks"
    assert "Course ready" in capsys.readouterr().out
    # Run again (a second run of the cell): nothing is fetched.
    shell = run_cell(source, on_colab=True, monkeypatch=isolated)
    assert shell.commands == []
    # Another notebook in the same runtime (a new kernel) finds the course fetched already.
    sys.modules.pop("course_setup")
    isolated.setattr(sys, "path", list(fresh_path))
    isolated.chdir(tmp_path)
    shell = run_cell(source, on_colab=True, monkeypatch=isolated)
    assert len(shell.commands) == 1 and sys.modules["course_setup"].COURSE_ROOT == clone


def test_with_no_public_address_a_notebook_opened_alone_says_so(isolated, tmp_path):
    isolated.chdir(tmp_path)
    isolated.setattr(sys, "path", [p for p in sys.path if p not in ("", str(ROOT))])
    source = colab_setup_source(None, course_dir=str(tmp_path / "nothing here"))
    with pytest.raises(RuntimeError, match="no public address yet: download the whole"):
        run_cell(source, on_colab=True, monkeypatch=isolated)


def test_a_repository_that_is_not_there_asks_for_no_password(isolated, tmp_path):
    isolated.chdir(tmp_path)
    isolated.setattr(sys, "path", [p for p in sys.path if p not in ("", str(ROOT))])
    source = colab_setup_source("ann/course", course_dir=str(tmp_path / "clone"),
                                url=(tmp_path / "missing.git").as_uri())
    with pytest.raises(ModuleNotFoundError):  # git has said why, just above
        run_cell(source, on_colab=True, monkeypatch=isolated)


def test_rewrite_points_only_the_setup_cell_at_another_repo(tmp_path):
    original = ROOT / notebook_paths()[0]
    copy = tmp_path / original.name
    copy.write_bytes(original.read_bytes())
    rewrite_colab_setup(copy, "someone/elsewhere", "v3")
    before, after = nbformat.read(original, 4), nbformat.read(copy, 4)
    changed = [index for index, (old, new) in enumerate(zip(before.cells, after.cells, strict=True))
               if old != new]
    assert changed == [before.cells.index(colab_setup_cells(before)[0])]
    assert "git clone --quiet https://github.com/someone/elsewhere" in \
        colab_setup_cells(after)[0].source
    assert "checkout --quiet v3" in colab_setup_cells(after)[0].source


def test_setup_source_refuses_a_bad_repo():
    with pytest.raises(ValueError, match="OWNER/NAME"):
        colab_setup_source("not a repo")
