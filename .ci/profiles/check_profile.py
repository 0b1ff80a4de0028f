"""Check that the course works on the packages of the environment this script runs in.

Run by `.ci/profiles/run` with a profile's own Python, after the course was installed
into it with `pip install --no-deps` (as the Colab setup cell does), so whatever this
checks runs on the profile's versions, not on constraints.txt's:

1. every explorer in ``helpers.widgets.EXPLORERS`` builds, and every one of its controls,
   moved one step through ipywidgets' API (``FigureExplorer.step``), leaves no error and
   changes the picture (a second step is allowed when the first happens to give the same
   picture): headless, with matplotlib's Agg backend, so no browser is needed;
2. every course notebook runs top to bottom in a fresh kernel of this Python with no cell
   producing an error output. Outputs are not compared: other versions may print other
   digits or warnings; they must not fail.

Usage: python check_profile.py NOTEBOOK_DIR. Prints what happened and exits 1 on any
failure.
"""

import argparse
import re
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before helpers imports pyplot

import nbformat  # noqa: E402
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


def check_explorers() -> list:
    """Build each explorer and step each control; return the failures as strings."""
    from helpers.widgets import EXPLORERS

    failures = []
    for name, factory in EXPLORERS.items():
        try:
            explorer = factory()
        except Exception:
            failures.append(f"explorer {name}: building it raised\n{traceback.format_exc()}")
            print(f"{name}: FAILED to build")
            continue
        if explorer.last_error is not None:
            failures.append(f"explorer {name}: first drawing failed: {explorer.last_error!r}")
            print(f"{name}: first drawing FAILED: {explorer.last_error!r}")
        for control in explorer.controls:
            outcome = step_control(explorer, control)
            print(f"{name}.{control}: {outcome}")
            if not outcome.startswith("ok"):
                failures.append(f"explorer {name}, control {control}: {outcome}")
    return failures


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


def check_notebooks(folder: Path) -> list:
    """Run each notebook in a fresh kernel, from its own folder (as Jupyter and Colab do);
    return the failures as strings. Every cell runs even after an error, so a failure
    list shows all of them (a later error may only follow from an earlier one)."""
    failures = []
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        client = NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                                allow_errors=True,
                                resources={"metadata": {"path": str(folder)}})
        started = time.perf_counter()
        try:
            client.execute()
        except Exception as error:  # a timeout or a dead kernel
            failures.append(f"notebook {path.name}: {type(error).__name__}: {error}")
        took = time.perf_counter() - started
        errors = error_outputs(notebook)
        for number, output in errors:
            trace = ANSI_COLOUR.sub("", "\n".join(output.get("traceback", [])))
            failures.append(f"notebook {path.name}, cell {number}: "
                            f"{output.ename}: {output.evalue}\n{trace}")
        print(f"{path.name}: {len(errors)} error output(s), {took:.0f} s")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook_dir", type=Path)
    notebook_dir = parser.parse_args().notebook_dir.resolve()

    print("== versions")
    print_versions()
    import helpers
    print(f"helpers from {Path(helpers.__file__).parent}")
    print("== explorers")
    failures = check_explorers()
    print("== notebooks")
    check_kernel_is_this_python()
    failures += check_notebooks(notebook_dir)
    print(f"== {len(failures)} failure(s)")
    for failure in failures:
        print(f"-- {failure}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
