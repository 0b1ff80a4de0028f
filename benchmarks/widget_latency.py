"""How fast each explorer answers a control change, with two renderers side by side.

    .venv/bin/python benchmarks/widget_latency.py [--changes 30] [--explorers name,...]
    .venv/bin/python benchmarks/widget_latency.py --encoders [--changes 30]
    .venv/bin/python benchmarks/widget_latency.py --draw-costs [--changes 30]

Per explorer (the course's manifest, course.toml, plus a bare heatmap at T = 8 and 16), the
in-process time of ``step(explorer, name)`` (tools/explorer_step.py): from one control
change to the new PNG bytes in ``explorer.image``, over a round-robin of steps of every
control, after one untimed warm-up step of each control. Median and worst, for two
renderers:

- ours: the explorer as built (``helpers.rendering.FigureRenderer``, blitting the
  artists its drawing declares);
- in-place: the same figure changed in place by the same explorer, then a full
  ``figure.canvas.draw()`` and a PNG through Pillow (``compress_level=1``): the honest
  baseline, what an explorer without our renderer would cost.

Each renderer drives its own explorer, built by the same factory (unwrapped: as the
notebooks call it, it closes the explorer it built before); the in-place renderer is
swapped in right after building, and the artists the first picture animated are drawn
as any others again. The two explorers take the same steps in the same rounds, each
round in a rotated order, so the machine's drift reaches both alike. Also printed: how
many timed steps ours drew in full (a new layout: tick labels, panels shown or hidden;
``tools/full_draws.py`` counts them), and the build time (the faster of the two builds:
the factory and its first picture). Target: ours, median <= 50 ms. An explorer that
fails is reported as such, and the run goes on.

``--encoders`` times the PNG encoding alone instead, on the frames each explorer shows:
after each step, the canvas just rendered is encoded by ours (``helpers.rendering``'s
``png_bytes``) and by Pillow (``pillow_png``), in alternating order; median and worst ms,
and the PNGs' sizes.

``--draw-costs`` times what ours spends drawing the animated parts of each frame (every
``draw_artist`` call), and how much of it is text: all texts, and those whose words never
changed over the run.
"""

import argparse
import inspect
import io
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from PIL import Image  # noqa: E402

from helpers.plotting import Heatmap  # noqa: E402
from helpers.rendering import png_bytes  # noqa: E402
from helpers.widgets import FigureExplorer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the course's tools, however this script is started
from tools.course import explorers  # noqa: E402
from tools.explorer_step import step  # noqa: E402  (moves a control as a person would)
from tools.full_draws import count_full_draws  # noqa: E402

TARGET_MS = 50


class InPlaceBaseline:
    """A full draw of the figure as it is, and a PNG through Pillow. It animates nothing:
    the artists an explorer declares are drawn as any others."""

    def __init__(self, figure, *, dpi: float):
        self.figure = figure
        figure.set_dpi(dpi)
        for artist in figure.findobj(lambda artist: artist.get_animated()):
            artist.set_animated(False)

    def png(self, animated=(), layout=None) -> bytes:
        for artist in animated:  # an explorer may make new ones (a legend anew)
            artist.set_animated(False)
        canvas = self.figure.canvas
        canvas.draw()
        buffer = io.BytesIO()
        Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(),
                         "raw", "RGBA", 0, 1).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


@dataclass
class HeatmapView:
    weights: np.ndarray
    title: str


class HeatmapDrawing:
    def __init__(self, T: int):
        self.figure, ax = plt.subplots(figsize=(1.6 + 0.45 * T, 1.4 + 0.45 * T),
                                       layout="constrained")
        plt.close(self.figure)
        self.heatmap = Heatmap(ax, np.zeros((T, T)))
        self.animated = [*self.heatmap.artists(), ax.title, *ax.spines.values()]

    def draw(self, view: HeatmapView):
        self.heatmap.update(view.weights)
        self.heatmap.ax.set_title(view.title)


def heatmap_explorer(T: int) -> FigureExplorer:
    """A bare (T, T) heatmap with a resample button: how the cost grows with T."""
    def compute(resample: int) -> HeatmapView:
        scores = np.random.default_rng(resample).normal(size=(T, T)) * 2
        weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
        return HeatmapView(weights, f"sample {resample}")

    return FigureExplorer({"resample": widgets.Button(description="resample")}, compute,
                          HeatmapDrawing(T))


class Lane:
    """One explorer driven with one renderer; `error` ends it, the others go on."""

    def __init__(self, label: str, factory, renderer_class):
        self.label, self.times, self.error, self.explorer = label, [], None, None
        self.build_ms = self.full_draws = None
        self.run(self._build, factory, renderer_class)

    def run(self, action, *args):
        if self.error is not None:
            return
        try:
            action(*args)
            if self.explorer.last_error is not None:
                raise self.explorer.last_error
        except Exception as error:
            where = traceback.extract_tb(error.__traceback__)[-1]
            self.error = (f"{type(error).__name__}: {error} "
                          f"({Path(where.filename).name}:{where.lineno})")

    def _build(self, factory, renderer_class):
        started = time.perf_counter()
        self.explorer = inspect.unwrap(factory)()  # each lane's explorer stays open
        self.build_ms = (time.perf_counter() - started) * 1000
        if renderer_class is not None:
            figure = self.explorer.figure
            self.explorer.renderer = renderer_class(figure, dpi=figure.dpi)

    def warm_up(self):
        def steps():
            for name in self.explorer.controls:
                step(self.explorer, name)
                if self.explorer.last_error is not None:
                    raise self.explorer.last_error
            if not isinstance(self.explorer.renderer, InPlaceBaseline):  # ours: count
                self.full_draws = count_full_draws(self.explorer.renderer)
        self.run(steps)

    def timed_step(self, name: str):
        def move():
            started = time.perf_counter()
            step(self.explorer, name)
            self.times.append((time.perf_counter() - started) * 1000)
        self.run(move)

    def summary(self) -> str:
        if self.error is not None:
            return "error"
        return f"{statistics.median(self.times):.1f} / {max(self.times):.1f}"


def measure(factory, renderers: dict, changes: int) -> list:
    """One lane per renderer, stepped through the same controls in the same rounds."""
    lanes = [Lane(label, factory, renderer_class)
             for label, renderer_class in renderers.items()]
    for lane in lanes:
        lane.warm_up()
    names = list(next((lane.explorer.controls for lane in lanes if lane.error is None), []))
    if not names:
        return lanes
    for index in range(changes):
        turn = index % len(lanes)
        for lane in lanes[turn:] + lanes[:turn]:  # who goes first rotates
            lane.timed_step(names[index % len(names)])
        values = {repr(lane.explorer.values()) for lane in lanes if lane.error is None}
        if len(values) > 1:  # not the same sequence of values: no comparison
            for lane in lanes:
                lane.error = lane.error or f"the explorers' control values diverged: {values}"
    return lanes


def pillow_png(canvas) -> bytes:
    """The canvas as an RGB PNG through Pillow at compress_level=1, the fastest of the public
    routes measured here (``Image.fromarray`` of the RGB channels, or RGBA kept, were slower)."""
    buffer = io.BytesIO()
    rgba = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(),
                            "raw", "RGBA", 0, 1)
    rgba.convert("RGB").save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def compare_encoders(cases: dict, changes: int):
    """Ours and Pillow's PNG encoder on the frames each explorer shows (``--encoders``)."""
    encoders = {"ours": png_bytes, "Pillow": pillow_png}
    print(f"ms to encode one frame as PNG, median / worst of {changes} frames, and its size\n")
    header = (f"{'explorer':<26} {'pixels':>9} {'ours':>13} {'Pillow':>13} {'saved':>7} "
              f"{'KB ours':>8} {'KB Pillow':>10}")
    print(header)
    print("-" * len(header))
    for name, factory in cases.items():
        times, sizes = {label: [] for label in encoders}, {label: [] for label in encoders}
        try:
            explorer = factory()
            names = list(explorer.controls)
            for index in range(len(names) + changes):  # a warm-up step of each control first
                step(explorer, names[index % len(names)])
                if explorer.last_error is not None:
                    raise explorer.last_error
                if index < len(names):
                    continue
                canvas = explorer.renderer.canvas  # the frame the explorer just showed
                order = list(encoders) if index % 2 else list(encoders)[::-1]
                pngs = {}
                for label in order:
                    started = time.perf_counter()
                    pngs[label] = encoders[label](canvas)
                    times[label].append((time.perf_counter() - started) * 1000)
                    sizes[label].append(len(pngs[label]) / 1000)
            if strong_differences(pngs["ours"], pngs["Pillow"]):
                raise RuntimeError("the two encoders' pictures differ")
        except Exception as error:
            print(f"{name:<26} error: {type(error).__name__}: {error}")
            continue
        width, height = canvas.get_width_height()
        cells = {label: f"{statistics.median(times[label]):.1f} / {max(times[label]):.1f}"
                 for label in encoders}
        saved = statistics.median(times["Pillow"]) - statistics.median(times["ours"])
        print(f"{name:<26} {f'{width}x{height}':>9} {cells['ours']:>13} {cells['Pillow']:>13} "
              f"{saved:>7.1f} {statistics.median(sizes['ours']):>8.0f} "
              f"{statistics.median(sizes['Pillow']):>10.0f}", flush=True)


def compare_draw_costs(cases: dict, changes: int):
    """What ours spends drawing the animated parts of each frame, and how much of it is text
    (``--draw-costs``): every ``figure.draw_artist`` call of the renderer timed."""
    print(f"ms per frame drawing the animated parts, mean of {changes} steps, and the share "
          "of texts (captions, titles, labels)\n")
    print(f"{'explorer':<26} {'drawing':>8} {'texts':>7} {'unchanged texts':>16}")
    for name, factory in cases.items():
        try:
            explorer = factory()
            names = list(explorer.controls)
            for index in range(2 * len(names)):  # two warm-up rounds, as the others
                step(explorer, names[index % len(names)])
            figure = explorer.renderer.figure
            total, texts, words = [0.0], {}, {}
            draw_artist = figure.draw_artist

            def timed(artist, draw_artist=draw_artist, total=total, texts=texts, words=words):
                started = time.perf_counter()
                draw_artist(artist)
                spent = time.perf_counter() - started
                total[0] += spent
                if isinstance(artist, Text):
                    texts[artist] = texts.get(artist, 0.0) + spent
                    words.setdefault(artist, set()).add(artist.get_text())

            figure.draw_artist = timed  # an attribute of this figure only, for this run
            for index in range(changes):
                step(explorer, names[index % len(names)])
                if explorer.last_error is not None:
                    raise explorer.last_error
            del figure.draw_artist
        except Exception as error:
            print(f"{name:<26} error: {type(error).__name__}: {error}")
            continue
        unchanged = sum(spent for artist, spent in texts.items() if len(words[artist]) == 1)
        print(f"{name:<26} {total[0] / changes * 1000:>8.1f} "
              f"{sum(texts.values()) / changes * 1000:>7.1f} "
              f"{unchanged / changes * 1000:>16.1f}", flush=True)


def strong_differences(first: bytes, second: bytes) -> int:
    """How many pixels of two PNGs differ by more than 40 (of 255) in some channel."""
    first, second = (np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)
                     for png in (first, second))
    if first.shape != second.shape:
        return first.shape[0] * first.shape[1]
    return int((np.abs(first - second).max(-1) > 40).sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30, help="timed steps per explorer")
    parser.add_argument("--explorers", help="comma-separated names (default: all), among: "
                        "the explorers course.toml names, heatmap_T8, heatmap_T16")
    parser.add_argument("--encoders", action="store_true",
                        help="time the PNG encoding alone: ours against Pillow's")
    parser.add_argument("--draw-costs", action="store_true",
                        help="what ours spends drawing each frame, and how much is text")
    args = parser.parse_args()
    if args.changes < 1:
        parser.error("--changes must be at least 1")
    cases = dict(explorers())
    cases.update({f"heatmap_T{T}": (lambda T=T: heatmap_explorer(T)) for T in (8, 16)})
    if args.explorers:
        unknown = [name for name in args.explorers.split(",") if name not in cases]
        if unknown:
            parser.error(f"unknown {', '.join(unknown)}; known: {', '.join(cases)}")
        cases = {name: cases[name] for name in args.explorers.split(",")}

    print(f"Python {platform.python_version()}, matplotlib {matplotlib.__version__}, "
          f"numpy {np.__version__}, ipywidgets {widgets.__version__}, "
          f"torch {torch.__version__}, Pillow {Image.__version__}")
    if args.encoders:
        compare_encoders(cases, args.changes)
        return
    if args.draw_costs:
        compare_draw_costs(cases, args.changes)
        return
    renderers = {"ours": None, "in-place": InPlaceBaseline}
    print(f"ms from a control change to new PNG bytes, median / worst of {args.changes} "
          f"steps; target: ours median <= {TARGET_MS} ms\n")
    header = (f"{'explorer':<26} {'ours':>15} {'in-place':>15} "
              f"{'in-place/ours':>13} {'full draws':>10} {'build':>8}  target")
    print(header)
    print("-" * len(header))
    errors, missed, differ = [], [], []
    for name, factory in cases.items():
        lanes = measure(factory, renderers, args.changes)
        ours = lanes[0]
        columns = {lane.label: lane.summary() for lane in lanes}
        ratio = full = "-"
        met = "error"
        if ours.error is None:
            median = statistics.median(ours.times)
            met = "met" if median <= TARGET_MS else "MISSED"
            full = f"{len(ours.full_draws)}/{len(ours.times)}"
            if lanes[1].error is None:
                ratio = f"{statistics.median(lanes[1].times) / median:.1f}x"
                pixels = strong_differences(ours.explorer.image.value,
                                            lanes[1].explorer.image.value)
                if pixels:
                    differ.append(f"{name} ({pixels} px)")
        builds = [lane.build_ms for lane in lanes if lane.build_ms is not None]
        build = f"{min(builds):.0f} ms" if builds else "-"
        print(f"{name:<26} {columns['ours']:>15} {columns['in-place']:>15} {ratio:>13} "
              f"{full:>10} {build:>8}  {met}", flush=True)
        failed = {lane.label: lane.error for lane in lanes if lane.error}
        if failed and len(failed) == len(lanes) and len(set(failed.values())) == 1:
            failed = {"all renderers": ours.error}
        errors += [f"{name} ({label}): {error}" for label, error in failed.items()]
        if met != "met":
            missed.append(name)
    if errors:
        print("\nerrors:\n  " + "\n  ".join(errors))
    print("\nlast pictures, ours against in-place: " + (
        "differ in " + ", ".join(differ) if differ else "the same wherever both ran"))
    print(f"target missed or not measured: {', '.join(missed)}" if missed
          else "target met by all")


if __name__ == "__main__":
    main()
