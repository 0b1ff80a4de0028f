"""tools/outputs.py: stored outputs against a run's, as strict nbval compares them (make
check and the package profiles say which cells changed)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tools.check import related_tests
from tools.course import ROOT, notebook_paths
from tools.outputs import output_differences


def notebook_printing(*texts, tags=None):
    cells = [new_markdown_cell("# A title")]
    for text in texts:
        cell = new_code_cell("print(value)", outputs=[
            new_output("stream", name="stdout", text=text),
            new_output("display_data", data={"image/png": text.encode().hex(),
                                             "text/plain": "<Figure>"})])
        cell.metadata["tags"] = list(tags or [])
        cells.append(cell)
    return new_notebook(cells=cells)


def test_a_changed_text_is_named_with_its_first_differing_line():
    stored = notebook_printing("a\nb = 1\n", "same\n")
    run = notebook_printing("a\nb = 2\n", "same\n")
    [difference] = output_differences("lesson.ipynb", stored, run)
    assert difference == {"notebook": "lesson.ipynb", "cell": 1, "source": "print(value)",
                          "output": "stdout", "stored": "b = 1", "run": "b = 2"}


def test_pictures_and_ignored_cells_are_not_compared():
    assert output_differences("lesson.ipynb", notebook_printing("x\n"),
                              notebook_printing("x\n")) == []
    stored, run = notebook_printing("x\n"), notebook_printing("x\n")
    run.cells[1].outputs[1].data["image/png"] = "00"  # another picture, the same text
    assert output_differences("lesson.ipynb", stored, run) == []
    stored = notebook_printing("1.0 s\n", tags=["nbval-ignore-output"])
    run = notebook_printing("1.3 s\n", tags=["nbval-ignore-output"])
    assert output_differences("lesson.ipynb", stored, run) == []


def test_an_error_or_a_missing_output_is_a_difference():
    stored = notebook_printing("x\n")
    run = nbformat.from_dict(stored)
    run.cells[1].outputs = [new_output("error", ename="NameError", evalue="value",
                                       traceback=[])]
    [difference] = output_differences("lesson.ipynb", stored, run)
    assert difference["output"] == "error" and difference["run"] == "NameError: value"


def test_make_check_runs_tests_that_exist_for_every_notebook():
    for path in notebook_paths():
        files = related_tests(Path(path))[:-2]  # then -k and what it leaves out
        assert all((ROOT / name).is_file() for name in files), files
