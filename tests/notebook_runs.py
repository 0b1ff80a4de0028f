"""Running a notebook's cells in a fresh kernel, as the notebook tests need: nbclient,
a kernel started in the notebook's folder (as Jupyter starts it), and a report of what went
wrong, cell by cell."""

import re

from nbclient import NotebookClient

CELL_TIMEOUT = 300  # seconds per cell, room for the training cells of notebooks 8 and 9
RAISES = "raises-exception"
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # IPython colours its tracebacks


def first_line(source: str) -> str:
    return next((line for line in source.splitlines() if line.strip()), "")


def problems_of(cell, index: int, run: int) -> list:
    """What went wrong in ``cell`` (the ``index``-th of its notebook) on ``run`` (1 or 2),
    each as a paragraph naming the cell, its first line and the error."""
    where = f"run {run}, cell {index}: {first_line(cell.source)}"
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


def client_for(notebook, folder) -> NotebookClient:
    """A client that runs ``notebook`` in a fresh python3 kernel started in ``folder``, every
    cell even after an error."""
    return NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                          allow_errors=True, resources={"metadata": {"path": str(folder)}})


def run_twice(notebook, folder) -> list:
    """Run every code cell of ``notebook`` in order in a fresh kernel started in
    ``folder`` (as Jupyter starts it beside the notebook), then every one again in the same
    kernel. Returns what went wrong, cell by cell, in the order it happened."""
    client = client_for(notebook, folder)
    problems = []
    with client.setup_kernel():
        for run in (1, 2):
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type == "code":
                    client.execute_cell(cell, index)
                    problems += problems_of(cell, index, run)
    return problems
