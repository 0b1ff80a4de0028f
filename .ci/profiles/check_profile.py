"""Check that the course works on the packages of the environment this script runs in.

Run by `.ci/profiles/run` with a profile's own Python, on a copy of the course that is
not installed (as on Colab, a JupyterHub clone or a downloaded zip: each notebook's setup
cell finds the course one folder up), so whatever this checks runs on the profile's
versions, not on constraints.txt's:

1. every explorer in ``helpers.widgets.EXPLORERS`` builds, and every one of its controls,
   moved one step on a newly built explorer through ipywidgets' API
   (``FigureExplorer.step``), leaves no error and changes the picture (a second step is
   allowed when the first happens to give the same picture): headless, with matplotlib's
   Agg backend, so no browser is needed;
2. every course notebook runs top to bottom in a fresh kernel of this Python with no cell
   producing an error output. Outputs are not compared: other versions may print other
   digits or warnings; they must not fail.

Usage: python check_profile.py NOTEBOOK_DIR. Prints what happened and exits 1 on any
failure.
"""

import argparse
import os
import re
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before helpers imports pyplot
# Kernels inherit this: it silences debugpy's "frozen modules" warning at every start.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

import nbformat  # noqa: E402
from matplotlib import pyplot  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

CELL_TIMEOUT = 300  # seconds per notebook cell
PACKAGES = ["torch", "numpy", "matplotlib", "pillow", "ipywidgets", "ipykernel", "ipython",
            "jupyter_client", "nbclient", "nbformat"]
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # IPython colours its tracebacks


def print_versions():
    print(f"python {sys.version.split()[0]} ({sys.executable})")
    for name in PACKAGES:
        try:
            print(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            print(f"{name} not installed")


def check_explorers() -> dict:
    """Build each explorer, then step each of its controls on an explorer of its own, just
    built (so that no control is left where it cannot move: a query slider squeezed to one
    row by a sequence length stepped round to 1, say). Returns {what: failure or None},
    what being an explorer's name (building it) or "explorer.control"."""
    from helpers.widgets import EXPLORERS

    results = {}
    for name, factory in EXPLORERS.items():
        try:
            explorer = factory()
        except Exception:
            results[name] = f"building it raised\n{traceback.format_exc()}"
            print(f"{name}: FAILED to build")
            continue
        results[name] = (None if explorer.last_error is None
                         else f"first drawing failed: {explorer.last_error!r}")
        print(f"{name}: built" + (f", {results[name]}" if results[name] else ""))
        controls = list(explorer.controls)
        pyplot.close(explorer.figure)
        for control in controls:
            explorer = factory()
            outcome = step_control(explorer, control)
            pyplot.close(explorer.figure)
            print(f"{name}.{control}: {outcome}")
            results[f"{name}.{control}"] = None if outcome.startswith("ok") else outcome
    return results


def step_control(explorer, control: str) -> str:
    """Step one control until the picture changes (two steps at most); say what happened."""
    before = bytes(explorer.image.value)
    for steps in (1, 2):
        started = time.perf_counter()
        try:
            explorer.step(control)
        except Exception:
            return f"FAILED: step raised\n{traceback.format_exc()}"
        took = (time.perf_counter() - started) * 1000
        error = explorer.last_error
        if error is not None:
            trace = "".join(traceback.format_exception(error))
            return f"FAILED: step {steps} set last_error {error!r}\n{trace}"
        if bytes(explorer.image.value) != before:
            return f"ok, picture changed after {steps} step(s) ({took:.0f} ms)"
    return "FAILED: picture unchanged after 2 steps"


def check_kernel_is_this_python():
    """The notebooks must run on this environment's packages: fail early if the kernel
    named python3 starts another Python (a kernelspec installed elsewhere can shadow
    ipykernel's own)."""
    probe = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import sys; print(sys.executable, end='')")])
    NotebookClient(probe, timeout=CELL_TIMEOUT, kernel_name="python3").execute()
    kernel_python = probe.cells[0].outputs[0]["text"]
    if kernel_python != sys.executable:
        sys.exit(f"kernel python3 runs {kernel_python}, not {sys.executable}")


def error_outputs(notebook) -> list:
    """(cell number, error output) for each error, in cells not tagged raises-exception
    (the tag nbclient and nbval use for a cell that is meant to fail)."""
    return [(number, output)
            for number, cell in enumerate(notebook.cells)
            if cell.cell_type == "code"
            and "raises-exception" not in cell.metadata.get("tags", [])
            for output in cell.outputs if output.output_type == "error"]


def stderr_outputs(notebook) -> list:
    """(cell number, text) for each stderr output: warnings worth knowing about."""
    return [(number, output.text)
            for number, cell in enumerate(notebook.cells) if cell.cell_type == "code"
            for output in cell.outputs
            if output.output_type == "stream" and output.name == "stderr"]


def check_notebooks(folder: Path) -> dict:
    """Run each notebook in a fresh kernel, from its own folder (as Jupyter and Colab do).
    Returns {notebook name: failure or None}. Every cell runs even after an error, so a
    failure lists all of them (a later error may only follow from an earlier one)."""
    results = {}
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        client = NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                                allow_errors=True,
                                resources={"metadata": {"path": str(folder)}})
        started = time.perf_counter()
        problems = []
        try:
            client.execute()
        except Exception as error:  # a timeout or a dead kernel
            problems.append(f"{type(error).__name__}: {error}")
        took = time.perf_counter() - started
        errors = error_outputs(notebook)
        for number, output in errors:
            trace = ANSI_COLOUR.sub("", "\n".join(output.get("traceback", [])))
            problems.append(f"cells[{number}]: {output.ename}: {output.evalue}\n{trace}")
        results[path.name] = "\n".join(problems) or None
        print(f"{path.name}: {len(errors)} error output(s), {took:.0f} s")
        for number, text in stderr_outputs(notebook):  # information, not failures
            print(f"  stderr of cells[{number}]: {text.strip()[:300]}")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook_dir", type=Path)
    notebook_dir = parser.parse_args().notebook_dir.resolve()

    print("== versions")
    print_versions()
    # This script imports helpers as the notebooks do: from the course's folder, through
    # course_setup (it is not installed).
    sys.path.insert(0, str(notebook_dir.parent))
    import course_setup
    course_setup.ready(on_colab=False)
    import helpers
    print(f"helpers from {Path(helpers.__file__).parent}")
    print("== explorers")
    results = check_explorers()
    print("== notebooks")
    check_kernel_is_this_python()
    results.update(check_notebooks(notebook_dir))
    failures = {what: failure for what, failure in results.items() if failure}
    for what, failure in failures.items():
        print(f"-- FAILED {what}: {failure}")
    print(f"checks: {len(results) - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
