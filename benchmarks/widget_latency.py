"""How fast each explorer answers a control change, against re-plotting from scratch.

For every explorer factory in ``helpers.widgets`` (a function named ``*_explorer``), the
time from one control change to the new PNG in ``explorer.image`` (what the browser then
shows), over a round-robin of changes to every control. In the same run, on the same
sequence of values, the approach explorers replace: an ``ipywidgets.interact``-style
function that builds a new figure with ``plt.subplots`` on every change (here: the
factory's own figure code, run afresh), draws it and saves it as PNG with ``savefig``.

    .venv/bin/python benchmarks/widget_latency.py [--changes 30]

Targets: median at most 50 ms (for T <= 16) and at least 2x faster than re-plotting.
The first change of each control is not counted: it is when the explorer learns which
artists change and draws its background (printed as "first change"). "build" is the
time to build the explorer and render its first picture.
"""

import argparse
import statistics
import sys
import time
from contextlib import contextmanager
from types import SimpleNamespace

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import helpers.widgets  # noqa: E402
from helpers.plotting import Heatmap, figure_to_png  # noqa: E402
from helpers.widgets import FigureExplorer  # noqa: E402

TARGET_MS = 50
TARGET_SPEEDUP = 2


def explorer_factories() -> dict:
    return dict(helpers.widgets.EXPLORERS)


def heatmap_explorer(T: int, seed: int = 0):
    """A bare heatmap of T tokens with a resample button: how the cost grows with T."""
    generator = np.random.default_rng(seed)
    figure, ax = plt.subplots(figsize=(1.6 + 0.45 * T, 1.4 + 0.45 * T), layout="constrained")
    plt.close(figure)
    heatmap = Heatmap(ax, np.zeros((T, T)))

    def redraw(resample):
        scores = generator.normal(size=(T, T)) * 2
        heatmap.update(np.exp(scores) / np.exp(scores).sum(-1, keepdims=True))
        ax.set_title(f"sample {resample}")

    return FigureExplorer({"resample": widgets.Button(description="resample")}, figure, redraw)


def measure_explorer(factory, changes: int):
    """Times (ms) of `changes` control changes after one warm-up change per control, the
    first-change times, the time to build the explorer (what its notebook cell costs, once
    the imports are done), and the values seen after each change (to replay them)."""
    started = time.perf_counter()
    explorer = factory()
    build = (time.perf_counter() - started) * 1000
    names = list(explorer.controls)
    started = time.perf_counter()
    for name in names:
        explorer.step(name)
    first = (time.perf_counter() - started) * 1000 / len(names)
    times, values = [], []
    for index in range(changes):
        before = explorer.image.value
        started = time.perf_counter()
        explorer.step(names[index % len(names)])
        times.append((time.perf_counter() - started) * 1000)
        if explorer.last_error is not None:
            raise RuntimeError(f"{factory.__name__}: {explorer.last_error!r}")
        if explorer.image.value == before and not isinstance(
                explorer.controls[names[index % len(names)]], widgets.Button):
            print(f"  note: a change of {names[index % len(names)]!r} left the image as it was")
        values.append(explorer.values())
    return times, first, build, values


@contextmanager
def explorer_parts_only(factory):
    """The factory returns its figure and redraw function instead of an explorer."""
    module = sys.modules[factory.__module__]
    original = module.FigureExplorer
    module.FigureExplorer = lambda controls, figure, redraw, **_: SimpleNamespace(
        controls=controls, figure=figure, redraw=redraw)
    try:
        yield
    finally:
        module.FigureExplorer = original


def measure_replot(factory, values: list):
    """The interact-style baseline: a new figure for every change, drawn and saved."""
    times = []
    with explorer_parts_only(factory):
        for value in values:
            started = time.perf_counter()
            parts = factory()
            parts.redraw(**value)
            figure_to_png(parts.figure)
            times.append((time.perf_counter() - started) * 1000)
            plt.close(parts.figure)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30, help="changes timed (>= 20)")
    args = parser.parse_args()
    changes = max(args.changes, 20)
    print(f"{'explorer':<28} {'ours median / worst':>20} {'re-plot median / worst':>24} "
          f"{'speed-up':>9} {'first change':>13} {'build':>9}")
    cases = dict(explorer_factories())
    for T in (8, 16):
        cases[f"heatmap only, T={T}"] = lambda T=T: heatmap_explorer(T)
    failed = []
    for name, factory in cases.items():
        ours, first, build, values = measure_explorer(factory, changes)
        replot = measure_replot(factory, values)
        median, baseline = statistics.median(ours), statistics.median(replot)
        speedup = baseline / median
        print(f"{name:<28} {median:>9.1f} / {max(ours):>6.1f} ms "
              f"{baseline:>12.1f} / {max(replot):>6.1f} ms {speedup:>8.1f}x {first:>10.1f} ms "
              f"{build:>6.0f} ms")
        if median > TARGET_MS or speedup < TARGET_SPEEDUP:
            failed.append(name)
    print(f"\n{changes} changes each; targets: median <= {TARGET_MS} ms, "
          f">= {TARGET_SPEEDUP}x faster than re-plotting.")
    print("missed by: " + ", ".join(failed) if failed else "all targets met")


if __name__ == "__main__":
    main()
