"""How long each notebook takes to run, and how much memory its kernel needs.

Every notebook under notebooks/ runs top to bottom in a fresh kernel (nbclient, as
`make notebooks` does). Reported per notebook: the wall time of the whole run (kernel
start included) and the kernel's peak resident memory, read by the kernel itself
(resource.getrusage, ru_maxrss) in a cell appended at the end, so no short peak is
missed. Two floors, run in fresh kernels the same way:

- the import floor: a notebook that only imports torch and the helpers package (after
  ``%matplotlib inline``, as every notebook's setup cell runs it), the least any notebook
  can cost;
- the course floor: the import floor, then what every notebook of the course does by
  design, each for the first time in its kernel: one `torch.testing.assert_close`, one
  heatmap shown with `plot_attention`, one explorer shown (notebook 1's). First uses cost
  far more than later ones (torch 2.13's assert_close imports torch.distributed.tensor and
  sympy on its first call); the course floor prices them, so that what a notebook costs
  above it is its lessons. Its cells' own times (measured in the kernel) are printed.

The machine's speed drifts, so the runs are interleaved: each round runs, for every
notebook, the import floor, the course floor and the notebook. For each notebook the
fastest of its rounds is kept for all three (load only ever adds time), so every ratio
compares runs of the same number, made at the same times.

    .venv/bin/python benchmarks/course_runtime.py [--rounds 2] [--slowest 3] [--only 01 08]

Targets: the whole course at most 1.5x the course floor summed over the notebooks (the
lessons' own cells sized to stay quick on a 2-core CPU), and at most 600 MB peak per
kernel. The ratio to the import floor is printed too; 1.5x of it was the first target,
which the course floor alone comes close to (printed as "course floor / import floor").

A notebook that trains a model is reported apart (``APART``), with budgets of its own in
seconds, and left out of the ratios (the floors do not price training): notebooks 08 and
09 (which trains 08's model again before generating) at most 90 s each for the whole run
(kernel start included) and at most 60 s for their training cells together (the cells
that call ``train(``, timed in the kernel). It runs in the same
rounds, without floors beside it; its fastest round is kept.
"""

import argparse
import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the course's tools, however this script is started
from tools.course import notebook_paths  # noqa: E402

NOTEBOOK_DIR = ROOT / "notebooks"
TARGET_RATIO = 1.5
TARGET_PEAK_MB = 600
PEAK_CELL = """\
import json, resource, sys
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_mb": peak_kb / (1024 if sys.platform != "darwin" else 1024 ** 2)}))
"""
IMPORT_CELL = """\
%matplotlib inline
import torch
import helpers.attention, helpers.checks, helpers.data, helpers.plotting, helpers.widgets
from helpers.widgets.self_attention import self_attention_explorer
"""
# Notebooks reported apart, with their budgets in seconds (issue 20 for 08).
APART = {"08_tiny_gpt": {"whole run": 90.0, "training cells": 60.0},
         "09_generation_kv_cache": {"whole run": 90.0, "training cells": 60.0}}
TRAINING_CALL = re.compile(r"\btrain\(")
# What every notebook does once, beyond its imports (named as printed).
COURSE_CELLS = {
    "first assert_close": "torch.testing.assert_close(torch.ones(3), torch.ones(3))",
    "first heatmap shown": "helpers.plotting.plot_attention(torch.eye(6))",
    "an explorer shown": "self_attention_explorer()",
}


def floor_notebook(course: bool):
    sources = [IMPORT_CELL, *(COURSE_CELLS.values() if course else ())]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def cell_seconds(cell) -> float:
    """A cell's time in the kernel, from nbclient's record_timing."""
    timing = cell.metadata["execution"]
    started, replied = (datetime.fromisoformat(timing[key].replace("Z", "+00:00"))
                        for key in ("iopub.execute_input", "shell.execute_reply"))
    return (replied - started).total_seconds()


def run(notebook) -> dict:
    """Run the notebook in a fresh kernel: wall seconds, the kernel's peak MB, and each
    code cell's seconds in the kernel (before the appended peak cell)."""
    notebook.cells.append(nbformat.v4.new_code_cell(PEAK_CELL))
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    started = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - started
    peak = json.loads(notebook.cells[-1].outputs[0]["text"])["peak_mb"]
    cells = [(index, cell_seconds(cell), cell.source)
             for index, cell in enumerate(notebook.cells[:-1]) if cell.cell_type == "code"]
    return {"seconds": seconds, "peak_mb": peak, "cells": cells}


def fastest(runs: list) -> dict:
    return min(runs, key=lambda result: result["seconds"])


def first_line(source: str) -> str:
    line = next((line for line in source.splitlines() if line.strip()), "")
    return line if len(line) <= 60 else line[:57] + "..."


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2,
                        help="runs of each notebook and of each floor beside it (default 2)")
    parser.add_argument("--slowest", type=int, default=3,
                        help="how many of each notebook's slowest cells to list (default 3)")
    parser.add_argument("--only", nargs="+", metavar="PREFIX",
                        help="run only the notebooks whose names start with one of these "
                             "(e.g. --only 01 08); default: every notebook")
    args = parser.parse_args()
    every = [ROOT / path for path in notebook_paths()
             if not args.only or Path(path).name.startswith(tuple(args.only))]
    paths = [path for path in every if path.stem not in APART]
    apart = [path for path in every if path.stem in APART]
    runs = {path: {"import": [], "course": [], "notebook": []} for path in paths}
    apart_runs = {path: [] for path in apart}
    for round_number in range(args.rounds):
        print(f"round {round_number + 1} of {args.rounds} ...", flush=True)
        for path in paths:
            runs[path]["import"].append(run(floor_notebook(course=False)))
            runs[path]["course"].append(run(floor_notebook(course=True)))
            runs[path]["notebook"].append(run(nbformat.read(path, as_version=4)))
        for path in apart:
            apart_runs[path].append(run(nbformat.read(path, as_version=4)))

    met = report_lessons(paths, runs, args) if paths else True
    for path in apart:
        met &= report_apart(path, apart_runs[path], args)
    print("all targets met" if met else "targets missed")


def report_lessons(paths: list, runs: dict, args) -> bool:
    """Print the lesson notebooks beside their floors; True when the targets are met."""
    print(f"\n{'notebook':<34} {'wall time':>10} {'import floor':>13} {'x':>6} "
          f"{'course floor':>13} {'x':>6} {'peak memory':>12}")
    totals = {"notebook": 0.0, "import": 0.0, "course": 0.0}
    peaks = []
    for path in paths:
        best = {kind: fastest(results) for kind, results in runs[path].items()}
        for kind in totals:
            totals[kind] += best[kind]["seconds"]
        peaks.append(max(result["peak_mb"] for results in runs[path].values()
                         for result in results))
        seconds = best["notebook"]["seconds"]
        print(f"{path.name:<34} {seconds:>9.1f}s {best['import']['seconds']:>12.1f}s "
              f"{seconds / best['import']['seconds']:>6.2f} {best['course']['seconds']:>12.1f}s "
              f"{seconds / best['course']['seconds']:>6.2f} {peaks[-1]:>9.0f} MB")
        for index, cell_time, source in sorted(best["notebook"]["cells"], key=lambda c: -c[1])[
                :args.slowest]:
            print(f"    {cell_time:5.2f}s  cell {index:>2}: {first_line(source)}")

    course_cells = [cell for result in (fastest(runs[path]["course"]) for path in paths)
                    for cell in result["cells"][1:]]
    print("\ncourse floor, each first use's own time in the kernel (median of the runs kept):")
    for position, name in enumerate(COURSE_CELLS):
        times = sorted(cell[1] for cell in course_cells[position::len(COURSE_CELLS)])
        print(f"    {name:<22} {times[len(times) // 2]:5.2f}s   {COURSE_CELLS[name]}")

    import_ratio = totals["notebook"] / totals["import"]
    course_ratio = totals["notebook"] / totals["course"]
    peak = max(peaks)
    print(f"\nwhole course: {totals['notebook']:.1f} s for {len(paths)} notebooks (fastest of "
          f"{args.rounds} round(s) each; those reported apart not included)")
    print(f"    {course_ratio:.2f}x the course floor summed over them "
          f"(target <= {TARGET_RATIO}x: {'met' if course_ratio <= TARGET_RATIO else 'missed'})")
    print(f"    {import_ratio:.2f}x the import floor (first target <= {TARGET_RATIO}x: "
          f"{'met' if import_ratio <= TARGET_RATIO else 'missed'}); course floor / import "
          f"floor = {totals['course'] / totals['import']:.2f}")
    print(f"    largest kernel peak {peak:.0f} MB "
          f"(target <= {TARGET_PEAK_MB} MB: {'met' if peak <= TARGET_PEAK_MB else 'missed'})")
    return course_ratio <= TARGET_RATIO and peak <= TARGET_PEAK_MB


def training_seconds(result: dict) -> float:
    """The summed in-kernel time of the cells that call ``train(``."""
    return sum(seconds for _index, seconds, source in result["cells"]
               if TRAINING_CALL.search(source))


def report_apart(path: Path, results: list, args) -> bool:
    """Print a notebook reported apart against its budgets; True when all are met."""
    best = fastest(results)
    budget = APART[path.stem]
    measured = {"whole run": best["seconds"], "training cells": training_seconds(best)}
    peak = max(result["peak_mb"] for result in results)
    print(f"\n{path.name}, reported apart (fastest of {len(results)} run(s)):")
    met = peak <= TARGET_PEAK_MB
    for name, seconds in measured.items():
        ok = seconds <= budget[name]
        met &= ok
        print(f"    {name:<15} {seconds:6.1f} s (budget <= {budget[name]:.0f} s: "
              f"{'met' if ok else 'missed'})")
    print(f"    {'kernel peak':<15} {peak:6.0f} MB (target <= {TARGET_PEAK_MB} MB: "
          f"{'met' if peak <= TARGET_PEAK_MB else 'missed'})")
    for index, cell_time, source in sorted(best["cells"], key=lambda c: -c[1])[:args.slowest]:
        print(f"    {cell_time:5.2f}s  cell {index:>2}: {first_line(source)}")
    return met


if __name__ == "__main__":
    main()
