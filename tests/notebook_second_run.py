"""Learners re-run cells: under nbval, every notebook's code cells run a second time.

Strict nbval (``pytest --nbval``) runs a notebook's code cells in order in one fresh kernel
and compares each cell's outputs with the stored ones. This plugin (loaded by the
repository's conftest.py) adds to each notebook, after its last cell, the same cells again
in the same kernel, named "Cell N, run again": no cell may fail the second time either.
So each notebook is executed once for both checks.

On both runs a cell fails when it prints on stderr (a warning a learner would meet, even
in a cell whose outputs nbval does not compare). On the second run outputs are not
compared (a counter may print its next value); a cell fails when it raises, or when it is
tagged ``raises-exception`` (the tag nbval and nbclient know) and raises nothing. A cell
that shows an error by catching it passes as long as it still catches it.
"""

import re

import pytest
from nbformat import NotebookNode
from nbval.plugin import IPyNbCell, IPyNbFile

AGAIN = ", run again"
RAISES = "raises-exception"
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # IPython colours its tracebacks


def problems_of(cell, number: int, run: int) -> list:
    """What went wrong in code cell ``number`` (nbval's numbering) on ``run`` (1 or 2),
    each as a paragraph naming the cell, its first line and the error."""
    first_line = next((line for line in cell.source.splitlines() if line.strip()), "")
    where = f"run {run}, Cell {number}: {first_line}"
    errors = [output for output in cell.outputs if output.output_type == "error"]
    stderr = [output.text for output in cell.outputs
              if output.output_type == "stream" and output.name == "stderr"]
    problems = [f"{where}\n    printed on stderr: {text.strip()}" for text in stderr]
    if RAISES in cell.metadata.get("tags", []):
        if not errors:
            problems.append(f"{where}\n    tagged {RAISES} but raised nothing")
        return problems
    for error in errors:
        trace = ANSI_COLOUR.sub("", "\n".join(error.traceback))
        problems.append(f"{where}\n    {error.ename}: {error.evalue}\n"
                        + "\n".join("    | " + line for line in trace.splitlines()))
    return problems


class SecondRun(IPyNbCell):
    """A notebook cell run a second time in its notebook's kernel: no output compared, no
    error allowed but the ones its tag asks for."""

    def runtest(self):
        self.options = {**self.options, "check": False, "check_exception": True}
        super().runtest()
        ran = NotebookNode(source=self.cell.source, metadata=self.cell.metadata,
                           outputs=self.test_outputs)
        problems = problems_of(ran, self.cell_num, run=2)
        if problems:
            self.raise_cell_error("Cell failed when run again", "\n".join(problems))


def pytest_collection_modifyitems(items):
    """After the last cell of each notebook, its cells again, in order, named "Cell N, run
    again" (the same scope for pytest-xdist's ``--dist loadscope``, which runs a notebook
    on one worker, in order, in one kernel). Every cell is marked ``slow`` (``-m "not
    slow"`` leaves the notebooks out)."""
    by_notebook = {}
    for item in items:
        if isinstance(item, IPyNbCell) and isinstance(item.parent, IPyNbFile):
            by_notebook.setdefault(item.parent, []).append(item)
    for notebook, cells in by_notebook.items():
        again = [SecondRun.from_parent(notebook, name=cell.name + AGAIN,
                                       cell_num=cell.cell_num, cell=cell.cell,
                                       options=cell.options)
                 for cell in cells]
        for item in cells + again:
            item.add_marker(pytest.mark.slow)
        at = items.index(cells[-1]) + 1
        items[at:at] = again


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """On the first run too, a cell that prints on stderr fails, compared or not."""
    result = yield
    if isinstance(item, IPyNbCell) and not isinstance(item, SecondRun):
        ran = NotebookNode(source=item.cell.source, metadata=item.cell.metadata,
                           outputs=item.test_outputs or [])
        stderr = [problem for problem in problems_of(ran, item.cell_num, run=1)
                  if "printed on stderr" in problem]
        if stderr:
            item.raise_cell_error("Cell printed on stderr", "\n".join(stderr))
    return result
