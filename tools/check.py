"""The edit loop for one notebook: after changing a sentence, a code cell or a figure,

    make check NB=notebooks/NN_name.ipynb     # or: python -m tools.check notebooks/NN_name.ipynb

1. runs the notebook top to bottom in a fresh kernel and saves it with its new outputs
   (as `make notebooks` does: each print's pieces merged into one output);
2. compares its stored outputs with the new ones as strict nbval compares them
   (tools/outputs.py) and prints each cell whose outputs changed;
3. re-assigns its slides (tools/slides.py) and rewrites the README's list of notebooks if
   its time changed (tools/reading_time.py);
4. runs the tests that concern it: the stored notebook's own checks (tests/test_notebooks.py,
   its slides, its reading time), its exercise checks' tables, its explorer's tests and
   its explorer's walk (the modules course.toml names for it).

Exits 1 when the stored outputs were stale (the notebook now holds the new ones: read
`git diff` and run it again) or a test failed. `make test` runs the rest: strict nbval on
every notebook with a second run of every cell, the browser tests.
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbconvert.preprocessors import CoalesceStreamsPreprocessor, ExecutePreprocessor

from tools import reading_time, slides
from tools.course import ROOT, notebooks
from tools.outputs import output_differences

CELL_TIMEOUT = 600  # seconds per cell: the training cells of notebooks 8 and 9 take ~30


def execute_in_place(path: Path) -> None:
    """Run the notebook at ``path`` top to bottom in a fresh python3 kernel started in its
    folder (as Jupyter starts it) and save it with its outputs."""
    notebook = nbformat.read(path, as_version=4)
    ExecutePreprocessor(timeout=CELL_TIMEOUT, kernel_name="python3", record_timing=False)\
        .preprocess(notebook, {"metadata": {"path": str(path.parent)}})
    CoalesceStreamsPreprocessor().preprocess(notebook, {})
    nbformat.write(notebook, path)


def related_tests(path: Path) -> list:
    """The test files that concern the notebook at ``path``; the tests of the other
    notebooks and of their explorers are left out (-k)."""
    [entry] = [notebook for notebook in notebooks() if notebook.name == path.stem]
    others = " or ".join(name for notebook in notebooks() if notebook is not entry
                         for name in (notebook.name, notebook.explorer_name))
    return ["tests/test_notebooks.py", "tests/tools/test_slides.py",
            "tests/tools/test_reading_time.py",
            f"tests/checks/test_{entry.checks}_checks.py",
            f"tests/widgets/test_{entry.explorer_module}.py",
            "tests/widgets/test_explorer_walk.py", "-k", f"not ({others})"]


def check(path: Path) -> int:
    started = time.perf_counter()
    stored = nbformat.read(path, as_version=4)
    execute_in_place(path)
    ran = nbformat.read(path, as_version=4)
    print(f"{path}: ran in {time.perf_counter() - started:.0f} s")
    stale = output_differences(path.name, stored, ran)
    for difference in stale:
        print(f"  cell {difference['cell']} ({difference['source']}): its "
              f"{difference['output']} changed\n    stored: {difference['stored']}\n"
              f"    now:    {difference['run']}")

    slides.assign(ran)
    screens = len(slides.screens(ran))
    nbformat.write(ran, path)
    print(f"  slides: {screens} screens")
    readme = reading_time.README.read_text(encoding="utf-8")
    rewritten = reading_time.with_readme_list(readme, reading_time.measure_course())
    if rewritten != readme:
        reading_time.README.write_text(rewritten, encoding="utf-8")
        print("  README.md: the list of notebooks rewritten (its times changed)")

    tested = subprocess.run([sys.executable, "-m", "pytest", "-q",
                             *related_tests(path)], cwd=ROOT)
    print(f"{path}: checked in {time.perf_counter() - started:.0f} s")
    if stale:
        print(f"The stored outputs were stale: {len(stale)} compared cell(s) printed "
              "something else (above). The notebook now holds the new ones: read `git diff` "
              "and run `make check` again.")
    return 1 if stale or tested.returncode else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.check",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--execute-only", action="store_true",
                        help="only run each notebook and save its outputs (make notebooks)")
    args = parser.parse_args(argv)
    if args.execute_only:
        for path in args.notebooks:
            execute_in_place(path)
            print(f"{path}: executed")
        return 0
    return max(check(path) for path in args.notebooks)


if __name__ == "__main__":
    sys.exit(main())
