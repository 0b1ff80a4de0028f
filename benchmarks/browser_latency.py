"""How fast each explorer answers in JupyterLab, in a real browser, beside a floor.

    .venv/bin/python benchmarks/browser_latency.py [--moves 3] [--floor-moves 15] [--only 01 08]

Starts JupyterLab on 127.0.0.1 and a headless Chromium, as the browser tests do
(tools/browser/servers.py; a Chromium is needed: /usr/bin/chromium, chromium on PATH, or
CHROMIUM=/path). Every notebook of the course (or those whose names start with --only),
with its outputs cleared, is opened and run; then every control of every explorer is moved
--moves times by keyboard, as a person would (tools/browser/lab.py), and each move is timed
from its input event (a key, a click, a choice in a list: the first to reach the explorer)
to the new picture decoded and painted, as the page measures it. Before and after the
notebooks, a floor is timed the same way (--floor-moves moves each time): a bare
``ipywidgets.IntSlider`` that swaps an ``ipywidgets.Image`` between two ready-made PNGs of
an explorer's size, i.e. the widget round trip and the picture's transfer, decoding and
painting, with no figure drawn.

To say where a notebook's milliseconds go, two cells are added at the end of each served
copy: a probe that times every explorer's refresh in the kernel (compute, draw, render,
encode) and counts the moves its renderer drew in full, and the floor again, timed after
the explorers in the same page ("floor here": what the notebook's own page adds, its many
outputs).

Printed: per notebook, the median and worst ms and the number of moves, how far the median
is above the floor's, the kernel's median, the counts, the floor here, and the pictures'
sizes in px. Targets: every move within 150 ms, and each notebook's median at most 30 ms
above the floor's median. Asserts nothing; a notebook that fails is reported and the run
goes on. Numbers depend on the machine and on what else it is doing.
"""

import argparse
import json
import platform
import statistics
import sys
import tempfile
import traceback
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the course and its tests' browser tools, however started
from tools.browser.lab import (  # noqa: E402
    EXPLORER,
    IMAGE_TIMEOUT,
    PANEL,
    assert_no_error_outputs,
    control_moves,
    open_notebook,
    run_all_cells,
)
from tools.browser.servers import (  # noqa: E402
    find_chromium,
    headless_chromium,
    jupyter_lab_server,
)
from tools.course import notebook_paths  # noqa: E402

TARGET_MS = 150  # target: every move's picture within this
FLOOR_MARGIN_MS = 30  # target: each notebook's median at most this far above the floor's
FLOOR_NOTEBOOK = "latency_floor.ipynb"
FLOOR_CELL = """\
import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from helpers.rendering import png_bytes


def picture(seed):
    \"\"\"A PNG like an explorer's: 1300 x 460 px (explorers' pictures range from 850 x 330
    to 850 x 610), three annotated 6 x 6 heatmaps, encoded as explorers encode theirs.\"\"\"
    figure = Figure(figsize=(13, 4.6), dpi=100, layout="constrained")
    canvas = FigureCanvasAgg(figure)
    generator = np.random.default_rng(seed)
    for ax in figure.subplots(1, 3):
        values = generator.random((6, 6))
        ax.imshow(values, vmin=0, vmax=1)
        for (row, column), value in np.ndenumerate(values):
            ax.text(column, row, f"{value:.2f}", ha="center", va="center")
        ax.set_title(f"sample {seed}: largest weight {values.max():.2f}")
    canvas.draw()
    return png_bytes(canvas)


pictures = [picture(0), picture(1)]
print(" and ".join(f"{len(png) / 1000:.0f} KB" for png in pictures))
slider = widgets.IntSlider(value=0, min=0, max=1000, description="floor")
image = widgets.Image(value=pictures[0], format="png")
slider.observe(lambda change: setattr(image, "value", pictures[change["new"] % 2]),
               names="value")
floor = widgets.VBox([widgets.HBox([slider]), image])
floor.add_class("latency-floor")
floor
"""
# Appended to each notebook, after its own cells (with the floor cell after it): every
# open explorer in the kernel has its refresh timed (compute, draw, render, encode: what
# the kernel spends on a move), and its full draws counted, as tools/full_draws.py counts
# them (the kernel's working folder is a copy of the notebooks, without tools/): each
# keeps a new background. The button writes them out.
PROBE_CELL = """\
import gc
import json
import time

import ipywidgets as widgets
import matplotlib

from helpers.widgets import FigureExplorer

probed = [thing for thing in gc.get_objects()
          if issubclass(type(thing), FigureExplorer) and thing.renderer is not None]
refresh_ms, refresh_cpu_ms, full_draws = [], [], []


def counted(copy_from_bbox):
    def keep(bbox):
        full_draws.append(None)
        return copy_from_bbox(bbox)
    return keep


for explorer in probed:
    explorer.renderer.canvas.copy_from_bbox = counted(explorer.renderer.canvas.copy_from_bbox)


def timed(refresh):
    def refresh_and_time():
        started, cpu_started = time.perf_counter(), time.thread_time()
        refresh()
        refresh_ms.append((time.perf_counter() - started) * 1000)
        refresh_cpu_ms.append((time.thread_time() - cpu_started) * 1000)
    return refresh_and_time


for explorer in probed:
    explorer.refresh = timed(explorer.refresh)


def write_report(_button):
    report.value = json.dumps({"stack": f"matplotlib {matplotlib.__version__}, "
                                        f"ipywidgets {widgets.__version__}",
                               "refresh_ms": refresh_ms, "refresh_cpu_ms": refresh_cpu_ms,
                               "full_draws": len(full_draws)})


report = widgets.HTML()
button = widgets.Button(description="report")
button.on_click(write_report)
probe = widgets.VBox([button, report])
probe.add_class("latency-probe")
probe
"""
TIMING_SCRIPT = """(root, kinds) => {
    window.__courseStart = null;
    window.__courseShown = null;
    const started = () => { window.__courseStart ??= performance.now(); };
    for (const kind of kinds) {
        root.addEventListener(kind, started, {capture: true, once: true});
    }
    const img = root.querySelector('img');
    window.__courseObserver?.disconnect();
    window.__courseObserver = new MutationObserver(() => {
        img.decode().catch(() => null).then(() => requestAnimationFrame(() => {
            window.__courseShown ??= performance.now();
        }));
    });
    window.__courseObserver.observe(img, {attributes: true, attributeFilter: ['src']});
}"""


INPUT_EVENTS = ["keydown", "pointerdown", "click", "input", "change"]


def timed_move(page, widget, move, label: str = "") -> float:
    """Do ``move()``, wait for the widget's new picture; return the milliseconds, as the
    page measured them, from the move's input event to the new picture decoded and
    painted. The steps before the event (finding the control, focusing it) do not count,
    nor, in a text box, the typing: its move starts when Enter is pressed."""
    widget.evaluate(TIMING_SCRIPT, ["keydown"] if label == "text box" else INPUT_EVENTS)
    move()
    page.wait_for_function("() => window.__courseShown !== null", timeout=IMAGE_TIMEOUT)
    start, shown = page.evaluate("() => [window.__courseStart, window.__courseShown]")
    if start is None:
        raise RuntimeError("the move reached the explorer as no input event")
    return shown - start


def picture_size(widget) -> str:
    return widget.locator("img").first.evaluate(
        "img => `${img.naturalWidth} x ${img.naturalHeight}`")


def time_floor(page, moves: int) -> list:
    """Time ``moves`` moves of the floor's slider on the page (the floor's cell has run)."""
    floor = page.locator(f"{PANEL} .latency-floor")
    floor.scroll_into_view_if_needed()
    floor.locator("img").first.wait_for(timeout=IMAGE_TIMEOUT)
    [(_label, move)] = control_moves(page, floor.locator(".widget-slider").first)
    return [timed_move(page, floor, move) for _ in range(moves)]


def measure_floor(page, server, moves: int, settle: float) -> tuple:
    """Open the floor notebook, run it, wait ``settle`` seconds, time ``moves`` moves of
    its slider. Returns (ms of each move, picture size, what the notebook printed about
    its pictures)."""
    base, token, _ = server
    open_notebook(page, base, token, FLOOR_NOTEBOOK)
    run_all_cells(page)
    assert_no_error_outputs(page)
    page.wait_for_timeout(settle * 1000)
    times = time_floor(page, moves)
    printed = page.locator(
        f"{PANEL} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']"
    ).first.inner_text().strip()
    return times, picture_size(page.locator(f"{PANEL} .latency-floor")), printed


def measure_notebook(page, server, name: str, moves: int, floor_moves: int,
                     settle: float) -> dict:
    """Run the notebook (with the probe and the floor appended), wait ``settle`` seconds,
    then move every control of every explorer ``moves`` times, a control after another in
    page order; then the floor's slider ``floor_moves`` times. Returns the ms of each move
    and which of its control's moves it was (0: the first, as a learner meets it),
    the pictures' sizes, the kernel's ms of each refresh and its renderers' counts (the
    probe's report), and the floor's ms in this notebook."""
    base, token, _ = server
    open_notebook(page, base, token, name)
    run_all_cells(page)
    assert_no_error_outputs(page)
    page.wait_for_timeout(settle * 1000)
    explorers = page.locator(EXPLORER)
    times, labels, rounds, sizes = [], [], [], []
    for index in range(explorers.count()):
        explorer = explorers.nth(index)
        explorer.scroll_into_view_if_needed()
        explorer.locator("img").first.wait_for(timeout=IMAGE_TIMEOUT)
        sizes.append(picture_size(explorer))
        controls = explorer.locator(".widget-hbox").first.locator(":scope > *")
        for position in range(controls.count()):
            for round_, (label, move) in enumerate(
                    control_moves(page, controls.nth(position)) * moves):
                times.append(timed_move(page, explorer, move, label))
                labels.append(label)
                rounds.append(round_)
    probe = page.locator(f"{PANEL} .latency-probe")
    probe.scroll_into_view_if_needed()
    probe.locator("button").first.click()
    report = probe.locator(".widget-html-content").first
    page.wait_for_function("element => element.textContent.trim() !== ''",
                           arg=report.element_handle(), timeout=IMAGE_TIMEOUT)
    return {"times": times, "labels": labels, "rounds": rounds,
            "sizes": ", ".join(dict.fromkeys(sizes)),
            "kernel": json.loads(report.inner_text()),
            "floor": time_floor(page, floor_moves)}


def append_probe_and_floor(folder: Path, name: str):
    """Add the probe's cell and the floor's cell at the end of the served notebook."""
    path = folder / name
    notebook = nbformat.read(path, as_version=4)
    notebook.cells += [nbformat.v4.new_code_cell(PROBE_CELL),
                       nbformat.v4.new_code_cell(FLOOR_CELL)]
    nbformat.write(notebook, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=3,
                        help="moves of each explorer control (default 3)")
    parser.add_argument("--floor-moves", type=int, default=15,
                        help="moves of the floor's slider, before and after (default 15)")
    parser.add_argument("--settle", type=float, default=1.5,
                        help="seconds between the end of Run All and the first move "
                             "(default 1.5)")
    parser.add_argument("--only", nargs="+", metavar="PREFIX",
                        help="only the notebooks whose names start with one of these "
                             "(e.g. --only 01 08); default: every notebook")
    args = parser.parse_args()
    if args.moves < 1 or args.floor_moves < 1:
        parser.error("--moves and --floor-moves must be at least 1")
    if find_chromium() is None:
        parser.error("no Chromium found: install one (Debian/Ubuntu: apt-get install "
                     "chromium) or set CHROMIUM=/path/to/chromium")
    notebooks = [path for path in (ROOT / name for name in notebook_paths())
                 if not args.only or path.name.startswith(tuple(args.only))]
    print(f"Python {platform.python_version()}, Chromium {find_chromium()}; "
          f"{args.moves} move(s) per control, {args.floor_moves} floor moves before and "
          f"after, the first {args.settle} s after Run All", flush=True)
    results, sizes, floor, floor_printed, errors = {}, {}, {}, "", []
    with tempfile.TemporaryDirectory() as home, jupyter_lab_server(Path(home), notebooks) \
            as server, headless_chromium() as browser:
        floor_notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_CELL)])
        floor_notebook.metadata.kernelspec = {"name": "python3", "language": "python",
                                              "display_name": "Python 3 (ipykernel)"}
        nbformat.write(floor_notebook, server[2] / FLOOR_NOTEBOOK)
        for path in notebooks:
            append_probe_and_floor(server[2], path.name)
        runs = [("floor, before", None), *((path.name, path) for path in notebooks),
                ("floor, after", None)]
        for label, path in runs:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            try:
                if path is None:
                    floor[label], sizes["floor"], floor_printed = measure_floor(
                        page, server, args.floor_moves, args.settle)
                else:
                    results[label] = measure_notebook(page, server, label, args.moves,
                                                      args.floor_moves, args.settle)
                print(f"measured {label}", flush=True)
            except Exception as error:
                where = traceback.extract_tb(error.__traceback__)[-1]
                errors.append(f"{label}: {type(error).__name__}: {error} "
                              f"({Path(where.filename).name}:{where.lineno})")
                print(f"{label}: failed, see below", flush=True)
            finally:
                page.close()
    report(results, sizes, floor, floor_printed)
    if errors:
        print("\nerrors:\n  " + "\n  ".join(errors))


def report(results: dict, sizes: dict, floor: dict, floor_printed: str):
    print(f"\nms from a move's input event to the new picture decoded and painted; targets: "
          f"median at most {FLOOR_MARGIN_MS} ms above the floor's, worst <= {TARGET_MS} ms")
    floor_times = [time for times in floor.values() for time in times]
    floor_median = statistics.median(floor_times) if floor_times else None
    if floor_times:
        print("floor: a bare IntSlider swapping an Image between two ready-made PNGs "
              f"({floor_printed}), in a notebook of its own ("
              + ", ".join(f"{statistics.median(times):.0f} ms {when.split(', ')[1]} the "
                          "notebooks" for when, times in floor.items())
              + ") and at the end of each notebook (floor here)")
    print("kernel: the explorers' refresh in the kernel (compute, draw, render, encode), "
          "median; cpu: the CPU time of that refresh, median (less than kernel: the kernel "
          "waited for a core); full: moves drawn in full")
    if not results and not floor_times:
        print("nothing measured")
        return
    stacks = sorted({result["kernel"]["stack"] for result in results.values()})
    print(f"the notebooks' kernels: {'; '.join(stacks)}")
    print("first: each control's first move after Run All (median / worst, and the kernel's "
          "median for them); later: the moves after it (median)")
    header = (f"{'':<28} {'median':>6} {'worst':>5} {'moves':>5} {'above floor':>11} "
              f"{'kernel':>6} {'cpu':>4} {'full':>5} {'first':>11} {'kernel':>6} {'later':>5} "
              f"{'floor here':>10}  targets  pictures (px)")
    print("\n" + header)
    if floor_times:
        print(f"{'floor':<28} {statistics.median(floor_times):>6.0f} {max(floor_times):>5.0f} "
              f"{len(floor_times):>5}")
    missed, slow = [], []
    for name, result in results.items():
        times, kernel = result["times"], result["kernel"]
        if not times:
            continue
        median = statistics.median(times)
        above, met = "-", max(times) <= TARGET_MS
        if floor_median is not None:
            above = f"{median - floor_median:+.0f}"
            met = met and median - floor_median <= FLOOR_MARGIN_MS
        if not met:
            missed.append(name)
        refreshes = kernel["refresh_ms"]
        kernel_median = f"{statistics.median(refreshes):.0f}" if refreshes else "-"
        cpu = kernel["refresh_cpu_ms"]
        cpu_median = f"{statistics.median(cpu):.0f}" if cpu else "-"
        # Each move makes one refresh, in the same order, unless a control also moves
        # another (then the kernel's times are not split by control or round).
        paired = refreshes if len(refreshes) == len(times) else [None] * len(times)
        first = [(time, refresh) for time, refresh, round_ in
                 zip(times, paired, result["rounds"], strict=True) if round_ == 0]
        later = [time for time, round_ in zip(times, result["rounds"], strict=True) if round_]
        first_kernel = "-" if first[0][1] is None else \
            f"{statistics.median(refresh for _, refresh in first):.0f}"
        first_times = [time for time, _ in first]
        print(f"{name:<28} {median:>6.0f} {max(times):>5.0f} {len(times):>5} {above:>11} "
              f"{kernel_median:>6} {cpu_median:>4} {kernel['full_draws']:>5} "
              f"{statistics.median(first_times):>5.0f} / {max(first_times):>3.0f} "
              f"{first_kernel:>6} {f'{statistics.median(later):.0f}' if later else '-':>5} "
              f"{statistics.median(result['floor']):>10.0f}  {'met' if met else 'MISSED':<7}  "
              f"{result['sizes']}")
        by_control = {}
        for label, time, refresh in zip(result["labels"], times, paired, strict=True):
            by_control.setdefault(label, []).append((time, refresh))
        slow.append(f"{name}: " + ", ".join(
            f"{label} {statistics.median(time for time, _ in moves):.0f}"
            + ("" if moves[0][1] is None
               else f" ({statistics.median(refresh for _, refresh in moves):.0f} in the kernel)")
            for label, moves in by_control.items()))
    print("\nmedian ms by kind of control (and of its refresh in the kernel):\n  "
          + "\n  ".join(slow))
    print(f"\na target missed by: {', '.join(missed)}" if missed else "\ntargets met by all")


if __name__ == "__main__":
    main()
