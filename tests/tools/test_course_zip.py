"""The course's zip for learners (`make zip`): what a learner needs, inside one folder, and
nothing else; a notebook unzipped from it finds its course; the README gives its size."""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tools.course import notebook_paths
from tools.course_zip import COURSE_FOLDER, build_zip, learner_files
from tools.links import ROOT


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return build_zip(tmp_path_factory.mktemp("build"))


def names(path: Path) -> list:
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


def tracked() -> list:
    return subprocess.run(["git", "-C", str(ROOT), "ls-files"], check=True,
                          capture_output=True, text=True).stdout.splitlines()


def test_the_zip_holds_what_a_learner_needs_inside_one_folder(built):
    assert built.name == f"{COURSE_FOLDER}.zip"
    inside = names(built)
    assert {name.split("/")[0] for name in inside} == {COURSE_FOLDER}
    paths = {name.split("/", 1)[1] for name in inside}
    assert {path.split("/")[0] for path in paths} == {
        "notebooks", "helpers", "solutions", "course_setup.py", "README.md", "LICENSE",
        "Makefile", "pyproject.toml", "constraints.txt", "install_torch.py"}
    for folder in ("notebooks", "helpers", "solutions"):  # every tracked file of these
        assert {path for path in tracked() if path.startswith(f"{folder}/")} <= paths
    assert set(notebook_paths()) <= paths


def test_the_notebooks_go_in_as_they_are_with_their_outputs(built):
    with zipfile.ZipFile(built) as archive:
        for path in notebook_paths():
            data = archive.read(f"{COURSE_FOLDER}/{path}")
            assert data == (ROOT / path).read_bytes()
            cells = json.loads(data)["cells"]
            assert any(cell.get("outputs") for cell in cells), f"{path} has no outputs"


def test_the_zip_leaves_out_what_learners_do_not_need(built):
    paths = [name.split("/", 1)[1] for name in names(built)]
    assert len(paths) < len(tracked())
    for path in paths:
        parts = path.split("/")
        assert parts[0] not in {"tests", "tools", "benchmarks", ".ci", "build", ".venv"}
        assert not any(part.startswith(".") or part == "__pycache__" for part in parts), path
        assert not path.endswith(".pyc")


def test_only_tracked_files_go_in_and_hidden_ones_and_caches_stay_out(tmp_path):
    repo = tmp_path / "course"
    for path in ["course_setup.py", "README.md", "helpers/__init__.py", "helpers/.secret",
                 "helpers/__pycache__/core.cpython-311.pyc", "notebooks/.ipynb_checkpoints/a.ipynb",
                 "notebooks/01_a.ipynb", "tests/test_a.py", "tools/a.py", ".ci/run",
                 "course.toml"]:
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(path)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-f", "."], check=True)
    (repo / "helpers" / "untracked.py").write_text("not committed")
    assert learner_files(repo) == ["README.md", "course_setup.py", "helpers/__init__.py",
                                   "notebooks/01_a.ipynb"]
    built = build_zip(tmp_path / "out", "my-course", root=repo)
    assert sorted(names(built)) == [f"my-course/{path}" for path in learner_files(repo)]


def test_a_notebook_unzipped_from_it_runs_its_setup_from_the_course_inside(built, tmp_path):
    with zipfile.ZipFile(built) as archive:
        archive.extractall(tmp_path)
    course = tmp_path / COURSE_FOLDER
    notebook = json.loads((course / notebook_paths()[0]).read_text(encoding="utf-8"))
    setup = next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")
    # The cell as a kernel runs it (IPython's transforms), then where helpers came from.
    script = (
        "import sys\n"
        "from IPython.core.inputtransformer2 import TransformerManager\n"
        "exec(TransformerManager().transform_cell(sys.stdin.read()))\n"
        "import helpers\n"
        "print(course_setup.COURSE_ROOT)\n"
        "print(helpers.__file__)\n")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", script], input="".join(setup["source"]),
                         cwd=course / "notebooks", env=environment, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    ready, root, helpers = run.stdout.splitlines()[-3:]
    assert ready == "Course ready: helpers from this course's folder."
    assert Path(root) == course
    assert Path(helpers) == course / "helpers" / "__init__.py"


def test_the_readme_gives_the_zips_size(built):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"(\d+(?:\.\d+)?)\s+MB\s+zip\s+\(`make zip`\)", readme)
    assert stated, "the README does not give the size of the course's zip"
    size = built.stat().st_size / 1e6
    assert abs(size - float(stated[1])) <= 0.15 * size, (
        f"the README says the zip is {stated[1]} MB; make zip writes {size:.1f} MB")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_unzipped_the_readmes_make_lab_finds_what_it_installs_from(built, tmp_path):
    with zipfile.ZipFile(built) as archive:
        archive.extractall(tmp_path)
    course = tmp_path / COURSE_FOLDER
    run = subprocess.run(["make", "-n", "lab"], cwd=course, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr  # its prerequisites are there
    named = set(re.findall(r"(?<![\w/.-])([\w-]+\.(?:py|txt|toml))\b", run.stdout))
    assert {"install_torch.py", "constraints.txt"} <= named
    for name in named:
        assert (course / name).is_file(), f"make lab uses {name}, which the zip lacks"
