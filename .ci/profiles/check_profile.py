"""Check that the course works on the packages of the environment this script runs in.

Run by `.ci/profiles/run` with a profile's own Python, on a copy of the course that is
not installed (as on Colab, a JupyterHub clone or a downloaded zip: each notebook's setup
cell finds the course one folder up), so whatever this checks runs on the profile's
versions, not on constraints.txt's:

1. every explorer the course's manifest names (course.toml) builds, and every one of its
   controls, moved one step on a newly built explorer through ipywidgets' API (``step``
   of the course's tools/explorer_step.py), leaves no error and changes the picture (a
   second step is allowed when the first happens to give the same picture): headless, with
   matplotlib's Agg backend, so no browser is needed;
2. every course notebook runs top to bottom in a fresh kernel of this Python with no cell
   producing an error output;
3. every output the notebooks store is compared with this run's, as strict nbval compares
   them (tools/outputs.py: text only; cells tagged nbval-ignore-output or nbval-skip left
   out). Other
   versions may print other digits or warnings: each cell that differs must be accounted
   for in differences.toml beside this script (why the difference is harmless, or why the
   prose is true either way); one that is not fails the check. The differences found are
   written to differences.json in the working folder (`python -m tools.profile_differences`
   turns them into the table in benchmarks/README.md);
4. this PyTorch's dropout draws its keep mask one of the two ways the course computes
   (helpers/attention/dropout_streams.py: ``mkl_keep_mask``, older releases such as torch
   2.5.0, on Intel and AMD CPUs alike; ``generator_keep_mask``, recent ones): that way's
   function gives the same masks and leaves the generator in the same state, on varied
   shapes, p and seeds; the floors profile (torch 2.5.0) must draw through MKL.

Usage: python check_profile.py NOTEBOOK_DIR. Prints what happened and exits 1 on any
failure.
"""

import argparse
import json
import os
import re
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no screen: every picture is drawn off-screen
# Kernels inherit this: it silences debugpy's "frozen modules" warning at every start.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

try:
    import tomllib  # noqa: E402
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

CELL_TIMEOUT = 300  # seconds per notebook cell
PACKAGES = ["torch", "numpy", "matplotlib", "pillow", "ipywidgets", "ipykernel", "ipython",
            "jupyter_client", "nbclient", "nbformat"]
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # IPython colours its tracebacks
HERE = Path(__file__).resolve().parent


def installed_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def print_versions():
    print(f"python {sys.version.split()[0]} ({sys.executable})")
    for name in PACKAGES:
        print(f"{name} {installed_version(name)}")


def check_dropout_stream(profile: str) -> dict:
    """This PyTorch's dropout draws its keep mask one of the two ways the course computes
    (helpers/attention/dropout_streams.py: through MKL in older releases, from the
    generator's doubles in recent ones), and that way's function must equal it: masks and
    the generator's state after, on varied shapes, p and seeds. The floors profile's torch
    2.5.0 must draw through MKL."""
    import torch

    from tools.dropout_ways import WAYS, draws_alike, installed_ways

    found = installed_ways()
    print(f"torch {torch.__version__} draws dropout's keep mask "
          f"{found[0] if found else 'neither way the course computes'}")
    if len(found) != 1:
        return {"dropout stream": f"torch {torch.__version__} draws {found or 'neither way'}"}
    if profile == "floors" and found[0] != "through MKL":
        return {"dropout stream": f"torch {torch.__version__} should draw through MKL here"}
    cases = [(seed, shape, 1 - p, use_generator)
             for seed in (0, 123, 2**31 + 7, 987654321)
             for shape in ((6, 6), (1,), (2, 3, 7), (1000, 6, 6), (3, 1601))
             for p in (0.1, 0.5, 0.9, 1 / 3) for use_generator in (False, True)]
    wrong = [case for case in cases if not draws_alike(WAYS[found[0]], *case)]
    print(f"the course's function for it equals it on {len(cases) - len(wrong)} of "
          f"{len(cases)} cases")
    return {"dropout stream": f"differs on {wrong[:5]}" if wrong else None}


def check_explorers() -> dict:
    """Build each explorer, then step each of its controls on an explorer of its own, just
    built (so that no control is left where it cannot move: a query slider squeezed to one
    row by a sequence length stepped round to 1, say). Returns {what: failure or None},
    what being an explorer's name (building it) or "explorer.control"."""
    from tools.course import explorers

    EXPLORERS = explorers()

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
        for control in controls:
            explorer = factory()
            outcome = step_control(explorer, control)
            print(f"{name}.{control}: {outcome}")
            results[f"{name}.{control}"] = None if outcome.startswith("ok") else outcome
    return results


def step_control(explorer, control: str) -> str:
    """Step one control until the picture changes (two steps at most); say what happened."""
    from tools.explorer_step import step  # the course copy's own

    before = bytes(explorer.image.value)
    for steps in (1, 2):
        started = time.perf_counter()
        try:
            step(explorer, control)
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


def load_accounts() -> list:
    """differences.toml: the output differences known and why each is harmless."""
    if tomllib is None:
        return []
    with open(HERE / "differences.toml", "rb") as file:
        return tomllib.load(file).get("difference", [])


def account_for(difference: dict, profile: str, accounts: list):
    """The account of a difference: the first entry naming its profile (or "any"), its
    notebook and a piece of its cell's first line."""
    for account in accounts:
        if (account["profile"] in (profile, "any")
                and account["notebook"] == difference["notebook"]
                and account["source"] in difference["source"]):
            return account
    return None


def check_notebooks(folder: Path, profile: str) -> dict:
    """Run each notebook in a fresh kernel, from its own folder (as Jupyter and Colab do).
    Returns {notebook name: failure or None}. Every cell runs even after an error, so a
    failure lists all of them (a later error may only follow from an earlier one). Then
    compares the outputs with the stored ones: differences not accounted for fail."""
    results, found, accounts = {}, [], load_accounts()
    from tools.course import notebooks
    from tools.outputs import output_differences

    for path in [folder / f"{notebook.name}.ipynb" for notebook in notebooks()]:
        stored = nbformat.read(path, as_version=4)
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
        differences = output_differences(path.name, stored, notebook)
        for difference in differences:
            account = account_for(difference, profile, accounts)
            difference["account"] = account["why"] if account else None
            if account is None:
                problems.append(
                    f"cells[{difference['cell']}] ({difference['source']}): its "
                    f"{difference['output']} differs from the stored one and differences.toml "
                    f"does not account for it:\n  stored: {difference['stored']}\n"
                    f"  here:   {difference['run']}")
        found += differences
        results[path.name] = "\n".join(problems) or None
        print(f"{path.name}: {len(errors)} error output(s), {len(differences)} cell(s) "
              f"with other outputs, {took:.0f} s")
        for number, text in stderr_outputs(notebook):  # information, not failures
            print(f"  stderr of cells[{number}]: {text.strip()[:300]}")
    versions = {name: installed_version(name) for name in PACKAGES}
    Path("differences.json").write_text(json.dumps(
        {"profile": profile, "versions": versions, "differences": found}, indent=1) + "\n")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook_dir", type=Path)
    parser.add_argument("--profile", default="any", help="the profile's name")
    arguments = parser.parse_args()
    notebook_dir, profile = arguments.notebook_dir.resolve(), arguments.profile

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
    print("== dropout's random stream")
    results.update(check_dropout_stream(profile))
    print("== notebooks")
    check_kernel_is_this_python()
    results.update(check_notebooks(notebook_dir, profile))
    failures = {what: failure for what, failure in results.items() if failure}
    for what, failure in failures.items():
        print(f"-- FAILED {what}: {failure}")
    print(f"checks: {len(results) - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
