"""Learners re-run cells. Every notebook runs top to bottom in a fresh kernel, then every
code cell runs a second time, in order, in the same kernel: no cell may fail either time.

A cell that shows an error by catching it passes as long as it still catches it; a cell
tagged ``raises-exception`` (the tag nbval and nbclient know) must raise on both runs. A
warning printed on stderr fails a cell too: strict nbval fails it on the first run, and a
learner who re-runs the cell should not meet one either.
"""

import nbformat
import pytest

from tests.notebook_runs import RAISES, run_twice
from tools.course import ROOT, notebook_paths


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda path: path.split("/")[-1])
def test_every_cell_can_run_a_second_time(path):
    notebook = nbformat.read(ROOT / path, as_version=4)
    problems = run_twice(notebook, (ROOT / path).parent)
    assert not problems, f"{path}:\n" + "\n".join(problems)


def test_a_cell_that_fails_on_its_second_run_is_named(tmp_path):
    """What the test above catches: a list from a module changed in place (the module
    stays imported, so the second run gets the changed list), a tagged cell that stops
    raising, a warning on stderr; and what it lets pass: an error caught and shown, a
    tagged cell that raises both times."""
    (tmp_path / "lesson_data.py").write_text("SIZES = [6, 3]\n")
    cells = [
        "from lesson_data import SIZES",
        "SIZES.append(1)  # in place: the module's list too\nassert SIZES == [6, 3, 1], SIZES",
        "try:\n    int('six')\nexcept ValueError as error:\n    print(error)",
        "raise KeyError('every time')",
        "if 'seen' not in globals():\n    seen = True\n    raise KeyError('first time only')",
        "import warnings\nwarnings.warn('a warning', stacklevel=1)",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)
                                               for source in cells])
    for index in (3, 4):
        notebook.cells[index].metadata["tags"] = [RAISES]
    problems = run_twice(notebook, tmp_path)
    assert [problem.splitlines()[0] for problem in problems] == [
        "run 1, cell 5: import warnings",
        "run 2, cell 1: SIZES.append(1)  # in place: the module's list too",
        "run 2, cell 4: if 'seen' not in globals():",
        "run 2, cell 5: import warnings",
    ], "\n".join(problems)
    assert "printed on stderr" in problems[0] and "UserWarning: a warning" in problems[0]
    assert "AssertionError: [6, 3, 1, 1]" in problems[1]
    assert "assert SIZES == [6, 3, 1], SIZES" in problems[1]  # the traceback's line
    assert f"tagged {RAISES} but raised nothing" in problems[2]
