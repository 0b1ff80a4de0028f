"""course.toml names every notebook, explorer, exercise check, solution and table of check
answers, and nothing else exists: a file the manifest does not name fails here, as does a
name with no file. Each test is one step of CONTRIBUTING.md's "Adding a notebook"."""

import importlib
import re
from pathlib import Path

import pytest

from helpers.checks.feedback import Check
from tools.course import ROOT, exercises, explorers, notebooks

SHARED_WIDGET_MODULES = {"__init__", "explorer", "training"}  # not one notebook's explorer
SHARED_CHECK_MODULES = {"__init__", "feedback"}  # helpers/checks: not one notebook's
NOTEBOOKS = notebooks()
IDS = [notebook.name for notebook in NOTEBOOKS]
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def stems(folder: str, pattern: str = "*.py") -> set:
    return {path.stem for path in (ROOT / folder).glob(pattern)}


def test_the_notebooks_are_the_manifests_in_its_order():
    """Step 1: the notebook file, named NN_topic, numbered in course order."""
    on_disk = sorted(stems("notebooks", "*.ipynb"))
    assert [notebook.name for notebook in NOTEBOOKS] == on_disk
    numbers = [int(re.match(r"(\d\d)_", notebook.name).group(1)) for notebook in NOTEBOOKS]
    assert numbers == list(range(1, len(NOTEBOOKS) + 1))


def test_every_explorer_module_is_one_notebooks():
    """Step 2: its explorer, a factory in helpers/widgets/<module>.py."""
    named = {notebook.explorer_module for notebook in NOTEBOOKS}
    assert stems("helpers/widgets") - SHARED_WIDGET_MODULES == named
    factories = explorers()
    assert len(factories) == len(NOTEBOOKS), "two notebooks name the same explorer"
    assert all(callable(factory) for factory in factories.values())


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_the_notebook_imports_its_explorer_and_checks_from_their_modules(notebook):
    source = (ROOT / notebook.path).read_text(encoding="utf-8")
    assert f"from helpers.widgets.{notebook.explorer_module} import" in source
    assert notebook.explorer_name in source
    if notebook.exercises:
        assert f"from helpers.checks.{notebook.checks} import" in source


def test_every_check_module_is_one_notebooks_and_lists_only_its_checks():
    """Step 3: its exercise checks, in helpers/checks/<checks>.py, each named in the
    manifest."""
    named = {notebook.checks for notebook in NOTEBOOKS if notebook.exercises}
    assert stems("helpers/checks") - SHARED_CHECK_MODULES == named
    for notebook in NOTEBOOKS:
        module = importlib.import_module(f"helpers.checks.{notebook.checks}")
        defined = {name for name, value in vars(module).items()
                   if isinstance(value, Check) and value.__module__ == module.__name__}
        listed = {exercise.check_name for exercise in notebook.exercises}
        assert defined == listed, f"helpers.checks.{notebook.checks}: checks {defined}, " \
                                  f"course.toml lists {listed}"


def test_every_solution_file_is_one_exercises():
    """Step 4: one solution file an exercise, in solutions/<notebook>/."""
    on_disk = {path.relative_to(ROOT).as_posix() for path in (ROOT / "solutions").rglob("*.py")}
    assert on_disk == {exercise.solution_path for exercise in exercises()}
    folders = {path.name for path in (ROOT / "solutions").iterdir() if path.is_dir()}
    assert folders <= {notebook.name for notebook in NOTEBOOKS}


def test_every_table_of_check_answers_is_one_notebooks():
    """Step 5: the table of right and wrong answers of each check, in
    tests/checks/test_<checks>_checks.py."""
    tables = {stem.removeprefix("test_").removesuffix("_checks")
              for stem in stems("tests/checks", "test_*_checks.py")}
    assert tables == {notebook.checks for notebook in NOTEBOOKS if notebook.exercises}
    for notebook in NOTEBOOKS:
        module = importlib.import_module(f"tests.checks.test_{notebook.checks}_checks")
        covered = {check.__name__ for check in module.TABLES}
        assert covered == {exercise.check_name for exercise in notebook.exercises}


def test_nothing_else_lists_the_notebooks():
    """The manifest is the only list: no module globs the notebooks folder by the
    notebooks' name pattern or imports explorers or checks through a registry."""
    for path in [*ROOT.glob("tools/*.py"), *ROOT.glob("tests/**/*.py"),
                 *ROOT.glob("benchmarks/*.py"), ROOT / ".ci" / "profiles" / "check_profile.py"]:
        text = path.read_text(encoding="utf-8")
        if path == Path(__file__):
            continue
        assert not re.search(r"glob\(\"\[0-9\]|glob\(\"0\[", text), f"{path} globs notebooks"
        assert not re.search(r"from helpers\.(widgets|checks) import (EXPLORERS|EXERCISES)",
                             text), f"{path} uses a registry the manifest replaced"


def test_contributing_says_how_to_add_a_notebook():
    section = CONTRIBUTING.split("## Adding a notebook")[1].split("\n## ")[0]
    for test in (test_the_notebooks_are_the_manifests_in_its_order,
                 test_every_explorer_module_is_one_notebooks,
                 test_every_check_module_is_one_notebooks_and_lists_only_its_checks,
                 test_every_solution_file_is_one_exercises,
                 test_every_table_of_check_answers_is_one_notebooks):
        assert test.__name__ in section, f"CONTRIBUTING's recipe does not name {test.__name__}"
