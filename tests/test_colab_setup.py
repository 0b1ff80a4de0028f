"""The first code cell of every notebook: the course found beside the notebook, fetched
on Colab (from a local repository standing in for GitHub, at a branch, a tag or a
commit) or, while it has no public address, found on Colab or in Google Drive (a
temporary folder standing in for /content) or asked for: the course's zip, made by
tools/course_zip.py, uploaded through a stand-in for ``google.colab.files``; or a clear
message when it cannot be."""

import os
import shutil
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from tools.course import notebook_paths
from tools.course_zip import COURSE_FOLDER, build_zip
from tools.links import (
    ROOT,
    colab_setup_cells,
    colab_setup_source,
    rewrite_colab_setup,
)
from tools.links import readme_repo_and_ref as readme_launch_address


def readme_repo_and_ref():
    """The repository and ref the README's Colab links use, or (None, "main") when the
    course has no public address yet."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme_launch_address(readme) or (None, "main")


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


class Files:
    """Stands in for ``google.colab.files``: ``upload()`` does what Colab's does once the
    learner has chosen files (saves each in the working folder, under a new name if one is
    taken, and returns {file name: bytes}); ``chosen`` is what the learner chooses at each
    call, and with nothing left to choose, an upload fails the test."""

    def __init__(self, *chosen: dict):
        self.chosen, self.calls = list(chosen), 0

    def upload(self):
        self.calls += 1
        if not self.chosen:
            raise AssertionError("the setup cell asked for an upload")
        uploaded = self.chosen.pop(0)
        for name, data in uploaded.items():
            stem, suffix = os.path.splitext(name)
            local, copy = name, 0
            while os.path.lexists(local):
                copy += 1
                local = f"{stem} ({copy}){suffix}"
            Path(local).write_bytes(data)
        return uploaded


def run_cell(source: str, *, on_colab: bool, monkeypatch, shell=None, files=None):
    if on_colab:
        colab = types.ModuleType("google.colab")
        colab.files = files or Files()
        monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
        monkeypatch.setitem(sys.modules, "google.colab", colab)
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    shell = shell or Shell()
    exec(TransformerManager().transform_cell(source), shell.namespace)
    return shell


def copy_of_the_course(folder: Path) -> Path:
    """What the setup cell needs of the course in ``folder``: its setup module, its
    helpers and a notebooks folder."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "course_setup.py", folder)
    shutil.copytree(ROOT / "helpers", folder / "helpers",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "notebooks").mkdir()
    (folder / "notebooks" / "01_lesson.ipynb").write_text("{}")
    return folder


@pytest.fixture
def colab(isolated, tmp_path):
    """A new Colab runtime: an empty folder standing in for /content is the working
    folder, and nothing of the course is on the import path or imported."""
    content = tmp_path / "content"
    content.mkdir()
    isolated.chdir(content)
    isolated.setattr(sys, "path", [p for p in sys.path if p not in ("", str(ROOT))])
    isolated.delitem(sys.modules, "helpers", raising=False)
    return content


def new_kernel(monkeypatch, content: Path):
    """Restart the kernel: the files in /content stay; what the cell imported, put on the
    import path or changed to does not."""
    sys.modules.pop("course_setup", None)
    sys.modules.pop("helpers", None)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(ROOT))
                                      and not p.startswith(str(content.parent))])
    monkeypatch.chdir(content)


READY = "Course ready: helpers from this course's folder.\n"


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
    work = copy_of_the_course(tmp_path_factory.mktemp("course"))

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


@pytest.fixture(scope="module")
def course_zip(tmp_path_factory) -> Path:
    """The course's zip, as `make zip` writes it."""
    return build_zip(tmp_path_factory.mktemp("build"))


def zip_with_marker(course_zip: Path, folder: Path, marker: str) -> bytes:
    """A copy of the course's zip with one more file, ``<course>/<marker>``."""
    copy = folder / f"{marker}.zip"
    shutil.copy(course_zip, copy)
    with zipfile.ZipFile(copy, "a") as archive:
        archive.writestr(f"{COURSE_FOLDER}/{marker}", marker)
    return copy.read_bytes()


def upload_prompt(content: Path) -> str:
    return (f"No copy of the course in {content} or in Google Drive: choose the course's "
            f"zip ({COURSE_FOLDER}.zip, from your lecturer) below.\n"
            "Tip: on Colab each notebook has its own runtime, so this upload serves this "
            "notebook only. To upload once for all notebooks, put the unzipped course folder "
            "in your Google Drive (MyDrive) and run  from google.colab import drive; "
            f"drive.mount('{content}/drive')  in a cell before this one.\n")


def test_with_nothing_on_colab_the_cell_asks_for_the_zip_and_uses_it(isolated, colab,
                                                                     course_zip, capsys):
    source = colab_setup_source(None, content=str(colab))
    files = Files({course_zip.name: course_zip.read_bytes()})
    run_cell(source, on_colab=True, monkeypatch=isolated, files=files)
    assert files.calls == 1
    [course] = colab.glob(f"upload-*/{COURSE_FOLDER}")  # unzipped into a folder of its own
    course_setup = sys.modules["course_setup"]
    assert course_setup.COURSE_ROOT == course
    assert course_setup.helpers_folder() == course / "helpers"
    assert Path.cwd() == course / "notebooks"
    assert capsys.readouterr().out == (f"{upload_prompt(colab)}Using the course in {course}\n"
                                       f"{READY}")
    # Run again in the same kernel, as learners do: the same course, nothing asked.
    run_cell(source, on_colab=True, monkeypatch=isolated, files=files)
    assert Path.cwd() == course / "notebooks"
    assert capsys.readouterr().out == READY
    # After a restart (a new kernel, back in /content): found again, nothing asked.
    new_kernel(isolated, colab)
    run_cell(source, on_colab=True, monkeypatch=isolated, files=files)
    assert files.calls == 1
    assert sys.modules["course_setup"].COURSE_ROOT == course
    assert capsys.readouterr().out == f"Using the course in {course}\n{READY}"


def test_two_zips_uploaded_are_unzipped_apart_and_the_newest_is_used_and_named(
        isolated, colab, course_zip, tmp_path, capsys):
    # Both hold the folder causal-attention-course/: unzipped together, one would land
    # over the other.
    zips = {f"{COURSE_FOLDER}.zip": zip_with_marker(course_zip, tmp_path, "FIRST"),
            f"{COURSE_FOLDER} (1).zip": zip_with_marker(course_zip, tmp_path, "SECOND")}
    files = Files(zips)
    run_cell(colab_setup_source(None, content=str(colab)), on_colab=True,
             monkeypatch=isolated, files=files)
    courses = list(colab.glob(f"upload-*/{COURSE_FOLDER}"))
    assert len(courses) == 2
    assert sorted([marker for marker in ("FIRST", "SECOND") if (course / marker).exists()]
                  for course in courses) == [["FIRST"], ["SECOND"]]
    newest = max(courses, key=lambda course: (course / "course_setup.py").stat().st_mtime)
    [other] = set(courses) - {newest}
    assert sys.modules["course_setup"].COURSE_ROOT == newest
    assert capsys.readouterr().out == (
        f"{upload_prompt(colab)}Using the course in {newest}\n"
        f"  the newest of 2 copies; the others: {other}\n{READY}")


@pytest.mark.parametrize("chosen", [{}, {"notes.txt": b"not a zip"}],
                         ids=["cancelled", "not a zip"])
def test_an_upload_with_no_course_in_it_stops_with_one_sentence(chosen, isolated, colab):
    files = Files(chosen, chosen)
    source = colab_setup_source(None, content=str(colab))
    for calls in (1, 2):  # run again: asked again, the same sentence
        with pytest.raises(RuntimeError) as stopped:
            run_cell(source, on_colab=True, monkeypatch=isolated, files=files)
        assert files.calls == calls
        assert str(stopped.value) == (
            "The upload held no copy of the course (a folder with course_setup.py and "
            f"helpers/): run this cell again and choose {COURSE_FOLDER}.zip.")
        assert stopped.value.__suppress_context__  # no ModuleNotFoundError above it
    assert "course_setup" not in sys.modules


@pytest.mark.parametrize("where", [
    "course",  # a zip with the course's files at its top, unzipped by hand
    "course/causal-attention-main",  # GitHub's zip: one folder, <name>-<branch>, at its top
    "causal-attention-main",  # GitHub's zip unzipped straight into /content
    "drive/MyDrive/causal-attention",  # in the learner's Google Drive, mounted
])
def test_with_a_copy_on_colab_or_in_drive_the_cell_uses_it_and_asks_for_nothing(
        where, isolated, colab, capsys):
    course = copy_of_the_course(colab / where)
    source = colab_setup_source(None, content=str(colab))
    run_cell(source, on_colab=True, monkeypatch=isolated)  # an upload would fail it
    assert sys.modules["course_setup"].COURSE_ROOT == course
    assert Path.cwd() == course / "notebooks"
    assert capsys.readouterr().out == f"Using the course in {course}\n{READY}"
    # Run again in the same kernel, as learners do: the same course, nothing searched.
    run_cell(source, on_colab=True, monkeypatch=isolated)
    assert sys.modules["course_setup"].COURSE_ROOT == course
    assert Path.cwd() == course / "notebooks"
    assert capsys.readouterr().out == READY
    # After a restart (a new kernel, back in /content) it is found again.
    new_kernel(isolated, colab)
    run_cell(source, on_colab=True, monkeypatch=isolated)
    assert Path.cwd() == course / "notebooks"
    assert capsys.readouterr().out == f"Using the course in {course}\n{READY}"


def test_of_several_copies_the_newest_is_used_and_the_others_named(isolated, colab, capsys):
    older = copy_of_the_course(colab / "course" / "causal-attention-main")
    in_drive = copy_of_the_course(colab / "drive" / "MyDrive" / COURSE_FOLDER)
    newer = copy_of_the_course(colab / "causal-attention-v2")
    not_a_course = colab / "notes"  # a course_setup.py without helpers beside it
    not_a_course.mkdir()
    (not_a_course / "course_setup.py").write_text("raise AssertionError('not a course')")
    for folder, seconds in [(older, 1_000_000_000), (in_drive, 1_500_000_000),
                            (newer, 2_000_000_000), (not_a_course, 3_000_000_000)]:
        os.utime(folder / "course_setup.py", (seconds, seconds))
    # A copy used before has new files (Python's __pycache__), not a newer course.
    os.utime(older, (4_000_000_000, 4_000_000_000))
    run_cell(colab_setup_source(None, content=str(colab)), on_colab=True,
             monkeypatch=isolated)
    assert sys.modules["course_setup"].COURSE_ROOT == newer
    assert Path.cwd() == newer / "notebooks"
    assert capsys.readouterr().out == (
        f"Using the course in {newer}\n"
        f"  the newest of 3 copies; the others: {older}, {in_drive}\n{READY}")


def test_with_no_public_address_a_notebook_opened_alone_elsewhere_says_so(isolated, tmp_path):
    isolated.chdir(tmp_path)
    isolated.setattr(sys, "path", [p for p in sys.path if p not in ("", str(ROOT))])
    source = colab_setup_source(None, content=str(tmp_path / "no such folder"))
    with pytest.raises(RuntimeError) as stopped:  # no google.colab: no upload asked for
        run_cell(source, on_colab=False, monkeypatch=isolated)
    assert str(stopped.value) == (
        "This notebook needs the whole course (no public address yet): unzip "
        f"{COURSE_FOLDER}.zip, from your lecturer, and open the notebook from its notebooks "
        "folder.")
    assert stopped.value.__suppress_context__
    assert "course_setup" not in sys.modules


def test_a_repository_that_cannot_be_fetched_stops_with_one_sentence(isolated, colab):
    url = (colab.parent / "missing.git").as_uri()  # as a private repository or no network
    source = colab_setup_source("ann/course", course_dir=str(colab / "clone"), url=url)
    for _run in (1, 2):  # run again: the same sentence, not a ModuleNotFoundError
        shell = Shell()
        with pytest.raises(RuntimeError) as stopped:
            run_cell(source, on_colab=True, monkeypatch=isolated, shell=shell)
        assert str(stopped.value) == (
            f"Could not fetch the course from {url} (git says why just above): check that "
            "this runtime is online and the repository is public, then run this cell again.")
        assert stopped.value.__suppress_context__
        assert len(shell.commands) == 1 and "git clone" in shell.commands[0]
        assert "GIT_TERMINAL_PROMPT=0" in shell.commands[0]  # asks for no password
    assert "course_setup" not in sys.modules


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
