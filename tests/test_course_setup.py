"""course_setup: what a notebook's setup cell relies on, wherever the notebook opens."""

import importlib.util
import sys
from importlib import metadata

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import course_setup
from tools.links import ROOT

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


def test_the_course_folder_comes_first_on_the_path(monkeypatch, capsys):
    # Installed or not, the helpers beside the notebooks are the ones imported: a copy
    # installed elsewhere (an older hub image, say) comes after them.
    monkeypatch.setattr(sys, "path", ["/an/installed/copy", *(p for p in sys.path
                                                             if p != str(ROOT))])
    course_setup.ready(on_colab=False)
    assert sys.path[0] == str(ROOT)
    assert capsys.readouterr().out == "Course ready: helpers from this course's folder.\n"
    sys.path.insert(0, "/somewhere/else")
    course_setup.ready(on_colab=False)  # run again: moved to the front, listed once
    assert sys.path[0] == str(ROOT)
    assert sys.path.count(str(ROOT)) == 1


def test_helpers_imported_from_elsewhere_earlier_are_named(monkeypatch, tmp_path, capsys):
    elsewhere = tmp_path / "old_copy" / "helpers"
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("")
    spec = importlib.util.spec_from_file_location("helpers", elsewhere / "__init__.py")
    monkeypatch.setitem(sys.modules, "helpers", importlib.util.module_from_spec(spec))
    course_setup.ready(on_colab=False)
    out = capsys.readouterr().out
    assert str(elsewhere) in out and "restart the kernel" in out


def test_a_course_folder_without_helpers_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(course_setup, "COURSE_ROOT", tmp_path)
    monkeypatch.setattr(course_setup, "helpers_folder", lambda: None)
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(course_setup.SetupError, match="whole course folder"):
        course_setup.ready(on_colab=False)


def test_on_colab_it_works_in_the_notebooks_folder(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    course_setup.ready(on_colab=True)
    assert course_setup.Path.cwd() == ROOT / "notebooks"


def test_in_a_real_kernel_a_missing_or_old_package_stops_run_all_with_its_fix(tmp_path):
    # A course folder whose course_setup asks for a package that is not installed and
    # for a matplotlib newer than any: the notebook's own setup cell, run in a kernel,
    # stops there with one error naming each package, the version found and the fix.
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from tools.links import colab_setup_source

    source = (ROOT / "course_setup.py").read_text(encoding="utf-8")
    demanding = source.replace('"matplotlib": "3.8",',
                               '"matplotlib": "99",\n    "no-such-package-here": "1.0",')
    assert demanding != source
    (tmp_path / "course_setup.py").write_text(demanding, encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(colab_setup_source()),
        nbformat.v4.new_code_cell("print('the lesson ran')")])
    client = NotebookClient(notebook, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path / "notebooks")}})
    with pytest.raises(CellExecutionError) as stopped:
        client.execute()
    error = stopped.value
    assert error.ename == "SetupError"
    found = metadata.version("matplotlib")
    assert (f"matplotlib {found} is installed; the course needs matplotlib >= 99. "
            'Fix: %pip install "matplotlib>=99" (then restart the kernel)') in error.evalue
    assert ("no-such-package-here is not installed; the course needs no-such-package-here "
            '>= 1.0. Fix: %pip install "no-such-package-here>=1.0"') in error.evalue
    assert notebook.cells[1].outputs == []  # Run All stopped at the setup cell


@pytest.mark.slow
def test_in_a_real_kernel_a_cell_ending_with_a_figure_shows_it_as_a_picture():
    # The helpers make their figures without pyplot, so nothing but the setup cell turns
    # on matplotlib's inline display: without it these cells would show only their text.
    from nbclient import NotebookClient

    from tools.links import colab_setup_source

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(colab_setup_source()),
        nbformat.v4.new_code_cell("import torch\nfrom helpers.plotting import plot_attention\n"
                                  "plot_attention(torch.full((3, 3), 1 / 3))"),
        nbformat.v4.new_code_cell("from helpers.dataflow import dataflow_figure\n"
                                  "dataflow_figure(highlight=('mask',))")])
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    for cell in notebook.cells[1:]:
        [output] = cell.outputs
        assert output.output_type == "execute_result"
        assert output.data["text/plain"].startswith("<Figure size ")
        assert "image/png" in output.data, f"no picture for:\n{cell.source}"


def test_a_figure_shown_in_a_notebook_carries_what_it_shows_as_alt_text():
    """``describe_figures`` wraps the PNG formatter that ``%matplotlib inline`` registers:
    the same PNG, with {"alt": ...} as its metadata; set up twice, it wraps once."""
    from IPython.core.formatters import PNGFormatter
    from matplotlib.figure import Figure

    from helpers.plotting import figure_description, new_figure

    formatter = PNGFormatter()
    formatter.for_type(Figure, lambda figure: b"PNG")
    figure = new_figure()
    figure.suptitle("A title")
    course_setup.describe_figures(formatter)
    course_setup.describe_figures(formatter)  # the setup cell run a second time
    assert formatter(figure) == (b"PNG", {"alt": figure_description(figure)})
