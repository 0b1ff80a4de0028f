"""The first code cell of every notebook sets the course up on Colab, and only there."""

import re
import sys
import types

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from helpers.links import (
    COLAB_COURSE_DIR,
    ROOT,
    colab_setup_cells,
    colab_setup_source,
    notebook_paths,
    rewrite_colab_setup,
)


def readme_repo_and_ref():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/", readme)
    return match.groups()


@pytest.mark.parametrize("path", notebook_paths())
def test_first_code_cell_is_the_colab_setup_for_the_readme_repo(path):
    notebook = nbformat.read(ROOT / path, as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert colab_setup_cells(notebook) == [code_cells[0]]
    assert code_cells[0].source == colab_setup_source(*readme_repo_and_ref()), (
        "regenerate with: python -m helpers.links OWNER/REPO --write")
    assert code_cells[0].outputs == []  # nothing happens outside Colab
    assert code_cells[0].metadata["slideshow"]["slide_type"] == "skip"


class FakeShell:
    """Records what the cell asks IPython to do instead of doing it, with {name}
    expanded from the cell's variables as IPython does."""

    def __init__(self):
        self.calls, self.namespace = [], {"get_ipython": lambda: self}

    def system(self, command):
        self.calls.append(("!", command.format(**self.namespace)))

    def run_line_magic(self, name, line, _stack_depth=None):
        self.calls.append(("%" + name, line.format(**self.namespace)))


def run_setup_cell(monkeypatch, *, on_colab: bool, cloned: bool):
    shell = FakeShell()
    widget_manager = []
    if on_colab:
        colab = types.ModuleType("google.colab")
        colab.output = types.SimpleNamespace(
            enable_custom_widget_manager=lambda: widget_manager.append(True))
        monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
        monkeypatch.setitem(sys.modules, "google.colab", colab)
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr("os.path.isdir", lambda path: cloned and path == COLAB_COURSE_DIR)
    code = TransformerManager().transform_cell(colab_setup_source("ann/course", "v2"))
    exec(code, shell.namespace)
    return shell.calls, widget_manager


def test_setup_cell_does_nothing_outside_colab(monkeypatch):
    assert run_setup_cell(monkeypatch, on_colab=False, cloned=False) == ([], [])


def test_setup_cell_clones_installs_and_enters_the_notebooks_on_colab(monkeypatch):
    calls, widget_manager = run_setup_cell(monkeypatch, on_colab=True, cloned=False)
    assert [kind for kind, _ in calls] == ["!", "%pip", "%cd"]
    assert calls[0][1].startswith("git clone")
    assert "--branch v2 https://github.com/ann/course " + COLAB_COURSE_DIR in calls[0][1]
    assert calls[1][1].split() == ["install", "--quiet", "--no-deps", COLAB_COURSE_DIR]
    assert calls[2][1] == f"{COLAB_COURSE_DIR}/notebooks"
    assert widget_manager == [True]


def test_setup_cell_run_twice_on_colab_does_not_clone_again(monkeypatch):
    calls, _ = run_setup_cell(monkeypatch, on_colab=True, cloned=True)
    assert calls == [("%cd", f"{COLAB_COURSE_DIR}/notebooks")]


def test_rewrite_points_only_the_setup_cell_at_another_repo(tmp_path):
    original = ROOT / notebook_paths()[0]
    copy = tmp_path / original.name
    copy.write_bytes(original.read_bytes())
    rewrite_colab_setup(copy, "someone/elsewhere", "v3")
    before, after = nbformat.read(original, 4), nbformat.read(copy, 4)
    changed = [index for index, (old, new) in enumerate(zip(before.cells, after.cells, strict=True))
               if old != new]
    assert changed == [before.cells.index(colab_setup_cells(before)[0])]
    assert "https://github.com/someone/elsewhere" in colab_setup_cells(after)[0].source
    assert "--branch v3" in colab_setup_cells(after)[0].source


def test_setup_source_refuses_a_bad_repo():
    with pytest.raises(ValueError, match="OWNER/NAME"):
        colab_setup_source("not a repo")
