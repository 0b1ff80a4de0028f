"""How long each notebook takes to run, and how much memory its kernel needs.

Every notebook under notebooks/ runs top to bottom in a fresh kernel (nbclient, as
`make notebooks` does). Reported per notebook: the wall time of the whole run (kernel
start included) and the kernel's peak resident memory, read by the kernel itself
(resource.getrusage, ru_maxrss) in a cell appended at the end, so no short peak is
missed. The floor, measured in the same run: a notebook that only imports torch and
the helpers package (the least any notebook of the course can cost), run twice; the
lower time is used, which makes the ratio the less flattering one.

    .venv/bin/python benchmarks/course_runtime.py

Targets: the whole course at most 1.5x the floor summed over the notebooks, and at most
600 MB peak per kernel.
"""

import json
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
TARGET_RATIO = 1.5
TARGET_PEAK_MB = 600
PEAK_CELL = """\
import json, resource, sys
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_mb": peak_kb / (1024 if sys.platform != "darwin" else 1024 ** 2)}))
"""
FLOOR_CELL = """\
import torch
import helpers.attention, helpers.data, helpers.plotting, helpers.widgets
"""


def run(notebook) -> tuple[float, float]:
    """Wall seconds to run the notebook in a fresh kernel, and the kernel's peak MB."""
    notebook.cells.append(nbformat.v4.new_code_cell(PEAK_CELL))
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    started = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - started
    output = notebook.cells[-1].outputs[0]["text"]
    return seconds, json.loads(output)["peak_mb"]


def main():
    notebooks = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    floor_runs = [run(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_CELL)]))
                  for _ in range(2)]
    floor_seconds = min(seconds for seconds, _ in floor_runs)
    floor_peak = max(peak for _, peak in floor_runs)
    print(f"{'notebook':<34} {'wall time':>10} {'x floor':>8} {'peak memory':>12}")
    print(f"{'floor (import torch + helpers)':<34} {floor_seconds:>9.1f}s {1:>8.2f} "
          f"{floor_peak:>9.0f} MB   (runs: "
          + ", ".join(f"{seconds:.1f}s" for seconds, _ in floor_runs) + ")")
    total, peaks = 0.0, []
    for path in notebooks:
        seconds, peak = run(nbformat.read(path, as_version=4))
        total += seconds
        peaks.append(peak)
        print(f"{path.name:<34} {seconds:>9.1f}s {seconds / floor_seconds:>8.2f} {peak:>9.0f} MB")
    ratio = total / (floor_seconds * len(notebooks))
    print(f"\nwhole course: {total:.1f} s for {len(notebooks)} notebook(s) = {ratio:.2f}x the "
          f"floor summed over them (target <= {TARGET_RATIO}x); largest kernel peak "
          f"{max(peaks):.0f} MB (target <= {TARGET_PEAK_MB} MB)")
    met = ratio <= TARGET_RATIO and max(peaks) <= TARGET_PEAK_MB
    print("all targets met" if met else "targets missed")


if __name__ == "__main__":
    main()
