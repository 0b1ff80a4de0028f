"""course_setup: what a notebook's setup cell relies on, wherever the notebook opens."""

import sys
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import course_setup
from helpers.links import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib


def pip_dependencies() -> dict:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {Requirement(dep).name: str(Requirement(dep).specifier)
            for dep in project["dependencies"]}


def test_the_required_versions_are_the_declared_lower_bounds():
    declared = pip_dependencies()
    for name, lowest in course_setup.REQUIREMENTS.items():
        bounds = [Version(spec.version) for spec in Requirement(f"{name}{declared[name]}")
                  .specifier if spec.operator == ">="]
        assert bounds == [Version(lowest)], name
    imported = {"torch", "numpy", "matplotlib", "pillow", "ipywidgets", "ipykernel"}
    assert imported <= set(course_setup.REQUIREMENTS)


@pytest.mark.parametrize("version, expected", [
    ("2.13.0+cpu", (2, 13, 0)), ("3.8", (3, 8, 0)), ("2.0.0rc1", (2, 0, 0)), ("10", (10, 0, 0)),
    ("1.26.4", (1, 26, 4))])
def test_release_reads_the_numbers_a_lower_bound_is_compared_on(version, expected):
    assert course_setup.release(version) == expected


def test_missing_and_old_packages_are_named_with_the_version_and_the_fix():
    installed = metadata.version("numpy")
    problems = course_setup.package_problems(
        {"numpy": "999", "no-such-package-here": "1.0", "matplotlib": "3.8"})
    assert problems == [
        f'numpy {installed} is installed; the course needs numpy >= 999. '
        f'Fix: %pip install "numpy>=999" (then restart the kernel)',
        'no-such-package-here is not installed; the course needs no-such-package-here >= 1.0. '
        'Fix: %pip install "no-such-package-here>=1.0" (then restart the kernel)']
    outside = course_setup.package_problems({"torch": "999"}, in_notebook=False)
    assert "python -m pip install \"torch>=999\" --index-url https://download.pytorch.org/" \
        "whl/cpu" in outside[0] and "restart" not in outside[0]


def test_a_missing_package_stops_the_setup_with_its_fix(monkeypatch):
    monkeypatch.setattr(course_setup, "REQUIREMENTS", {"no-such-package-here": "1.0"})
    with pytest.raises(course_setup.SetupError, match="no-such-package-here is not installed"):
        course_setup.ready(on_colab=False)


def test_not_installed_the_course_is_imported_from_its_folder(monkeypatch, capsys):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(ROOT)])
    monkeypatch.setattr(course_setup, "helpers_installed", lambda: False)
    course_setup.ready(on_colab=False)
    assert sys.path[0] == str(ROOT)
    assert capsys.readouterr().out == f"Course ready: helpers from {ROOT}.\n"
    course_setup.ready(on_colab=False)  # run twice: added once
    assert sys.path.count(str(ROOT)) == 1


def test_on_colab_it_works_in_the_notebooks_folder(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    course_setup.ready(on_colab=True)
    assert course_setup.Path.cwd() == ROOT / "notebooks"


def test_installed_it_says_so_and_leaves_the_path(monkeypatch, capsys):
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = list(sys.path)
    monkeypatch.setattr(course_setup, "helpers_installed", lambda: True)
    course_setup.ready(on_colab=False)
    assert sys.path == before
    assert capsys.readouterr().out == "Course ready: helpers installed.\n"
