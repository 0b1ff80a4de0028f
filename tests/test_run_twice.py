"""The second run of every notebook's cells under nbval (tests/notebook_second_run.py):
what it catches and what it lets pass, on a small notebook run by pytest as `make test`
runs the course's."""

import subprocess
import sys

import nbformat

from tests.notebook_second_run import RAISES
from tools.course import ROOT


def test_a_cell_that_fails_on_its_second_run_is_named(tmp_path):
    """A list from a module changed in place (the module stays imported, so the second run
    gets the changed list), a tagged cell that stops raising, a warning on stderr (in a
    cell whose outputs are not compared, so only this plugin sees it) fail; an error
    caught and shown, and a tagged cell that raises both times, pass."""
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
    notebook.cells[5].metadata["tags"] = ["nbval-ignore-output"]
    path = tmp_path / "lesson.ipynb"
    nbformat.write(notebook, path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the course's settings
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.notebook_second_run", "-p",
         "no:cacheprovider", "--nbval-lax", "--nbval-current-env", "-rA", str(path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
             "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    report = run.stdout
    outcomes = {line.split("::")[1].split(" - ")[0]: line.split()[0] for line in report.splitlines()
                if line.startswith(("PASSED", "FAILED"))}
    assert outcomes == {
        "Cell 0": "PASSED", "Cell 1": "PASSED", "Cell 2": "PASSED", "Cell 3": "PASSED",
        "Cell 4": "PASSED", "Cell 5": "FAILED",
        "Cell 0, run again": "PASSED", "Cell 1, run again": "FAILED",
        "Cell 2, run again": "PASSED", "Cell 3, run again": "PASSED",
        "Cell 4, run again": "FAILED", "Cell 5, run again": "FAILED",
    }, report
    assert "run 1, Cell 5: import warnings" in report and "UserWarning: a warning" in report
    assert "AssertionError: [6, 3, 1, 1]" in report
    assert "assert SIZES == [6, 3, 1], SIZES" in report  # the traceback's line
    assert f"run 2, Cell 4: if 'seen' not in globals():\n    tagged {RAISES}" in report
