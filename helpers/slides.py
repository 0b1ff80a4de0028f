"""Lecture slides from the notebooks: slide metadata, how tall each slide is, the export.

Every cell carries ``metadata.slideshow.slide_type``, read by JupyterLab's RISE extension
(live slides) and by ``jupyter nbconvert --to slides`` (reveal.js HTML):

- ``slide`` starts a new slide (each ``#``/``##`` heading), ``subslide`` a new screen below
  it (each ``###`` heading, or where the previous screen is full);
- ``-`` continues the current screen, ``fragment`` appears on the next key press;
- ``notes`` is shown only in the speaker view, ``skip`` is left out (set by hand, kept).

``assign`` writes those types from the headings and a height estimate, so that no screen
holds more than a 1280 x 720 screenful (a browser test measures the exported slides);
``export`` writes the reveal.js HTML of every notebook:

    python -m helpers.slides assign notebooks/02_causal_masking.ipynb
    python -m helpers.slides export --output-dir build/slides

The estimate follows the sizes of nbconvert's slide template (20 px text with a 1.6 line
height, 19 px code, pictures at their own pixel size) on a 1280 px wide slide; it errs
on the tall side.
"""

import argparse
import base64
import math
import re
import struct
from pathlib import Path

import nbformat

SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
# What ``assign`` fills a screen up to, by the estimate below: measured in Chromium, the
# estimate is within a few percent; the margin absorbs the rest.
SCREEN_BUDGET = 690
SLIDE_TYPES = ("slide", "subslide", "-", "fragment", "notes", "skip")
HAND_SET = ("fragment", "notes", "skip")  # kept by ``assign``
# Live slides (RISE in JupyterLab, Alt+R) on the same 1280 x 720 canvas; scrolling only
# as a safety net.
RISE_SETTINGS = {"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT, "scroll": True,
                 "start_slideshow_at": "selected"}

TEXT_LINE_PX, TEXT_CHARS_PER_LINE = 32, 100
CODE_LINE_PX, CODE_CHARS_PER_LINE = 26, 90
HEADING_PX = {1: 90, 2: 70, 3: 56, 4: 44}
PARAGRAPH_GAP_PX = 16
DISPLAY_MATH_PX = 64
CELL_PADDING_PX = 36
WIDGET_PX = 640  # a live explorer: its controls above a figure

_HEADING = re.compile(r"^(#{1,6})\s")


def slide_type(cell) -> str:
    return cell.metadata.get("slideshow", {}).get("slide_type", "-")


def heading_level(cell) -> int | None:
    """The level of the heading a markdown cell starts with, or None."""
    if cell.cell_type != "markdown":
        return None
    match = _HEADING.match(cell.source.lstrip())
    return len(match.group(1)) if match else None


def _wrapped_lines(text: str, chars_per_line: int) -> int:
    return sum(max(1, math.ceil(len(line) / chars_per_line)) for line in text.splitlines())


def _markdown_height(source: str) -> int:
    height, in_math = 0, False
    for line in source.strip().splitlines():
        stripped = line.strip()
        if stripped.startswith("$$"):
            if not in_math or stripped != "$$":
                height += DISPLAY_MATH_PX
            in_math = not in_math if stripped == "$$" else in_math
        elif in_math:
            continue
        elif not stripped:
            height += PARAGRAPH_GAP_PX
        elif match := _HEADING.match(stripped):
            height += HEADING_PX.get(len(match.group(1)), 40)
        elif stripped.startswith("|") and set(stripped) <= set("|-: "):
            continue  # a table's rule line draws no row
        else:
            height += _wrapped_lines(stripped, TEXT_CHARS_PER_LINE) * TEXT_LINE_PX
    return height


def _png_height(data: str) -> int:
    raw = base64.b64decode(data[:64])
    return struct.unpack(">I", raw[20:24])[0]


def _output_height(output) -> int:
    if output.output_type == "stream":
        return _wrapped_lines(output.text, CODE_CHARS_PER_LINE) * CODE_LINE_PX
    data = output.get("data", {})
    if "application/vnd.jupyter.widget-view+json" in data:
        return WIDGET_PX
    if "image/png" in data:
        return _png_height(data["image/png"])
    if "text/plain" in data:
        return _wrapped_lines(data["text/plain"], CODE_CHARS_PER_LINE) * CODE_LINE_PX
    return 0


def cell_height(cell) -> int:
    """Estimated height in slide pixels of a cell and its outputs."""
    if cell.cell_type == "markdown":
        return _markdown_height(cell.source) + CELL_PADDING_PX
    if cell.cell_type != "code":
        return 0
    height = _wrapped_lines(cell.source, CODE_CHARS_PER_LINE) * CODE_LINE_PX + CELL_PADDING_PX
    return height + sum(_output_height(output) for output in cell.get("outputs", []))


def screens(notebook) -> list[list[int]]:
    """The cells (indices) on each screen, in order: a new one at every slide/subslide."""
    result = []
    for index, cell in enumerate(notebook.cells):
        kind = slide_type(cell)
        if kind in ("notes", "skip"):
            continue
        if kind in ("slide", "subslide") or not result:
            result.append([])
        result[-1].append(index)
    return result


def screen_heights(notebook) -> list[int]:
    return [sum(cell_height(notebook.cells[index]) for index in screen)
            for screen in screens(notebook)]


def assign(notebook) -> None:
    """Set every cell's slide type from the headings and the height budget.

    Types set by hand (fragment, notes, skip) stay. A ``#``/``##`` heading starts a slide,
    a ``###`` heading a subslide, and a cell that would overflow the current screen starts
    a new subslide. Also sets the notebook's RISE settings.
    """
    notebook.metadata["rise"] = dict(RISE_SETTINGS)
    used = None
    for cell in notebook.cells:
        kind = slide_type(cell)
        if kind in ("notes", "skip"):
            continue
        height = cell_height(cell)
        level = heading_level(cell)
        if used is None or (level is not None and level <= 2):
            new = "slide"
        elif level is not None or used + height > SCREEN_BUDGET:
            new = "subslide"
        else:
            new = kind if kind == "fragment" else "-"
        if new in ("slide", "subslide"):
            used = 0
        used += height
        cell.metadata.setdefault("slideshow", {})["slide_type"] = new


def exporter():
    """nbconvert's reveal.js exporter, set to a 1280 x 720 projector."""
    from nbconvert import SlidesExporter

    slides = SlidesExporter()
    slides.reveal_width, slides.reveal_height = str(SLIDE_WIDTH), str(SLIDE_HEIGHT)
    slides.reveal_scroll = True  # a safety net; the course keeps every screen in bounds
    slides.reveal_number = "c/t"
    return slides


def export(notebook_path: Path, output_dir: Path) -> Path:
    """Write the notebook's slides as ``<name>.slides.html`` in output_dir."""
    body, _ = exporter().from_filename(str(notebook_path))
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / f"{Path(notebook_path).stem}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target


def _main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.slides", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    assigning = commands.add_parser("assign", help="(re)write the slide types of notebooks")
    assigning.add_argument("notebooks", nargs="+", type=Path)
    exporting = commands.add_parser("export", help="export notebooks as reveal.js slides")
    exporting.add_argument("notebooks", nargs="*", type=Path)
    exporting.add_argument("--output-dir", type=Path, default=Path("build/slides"))
    args = parser.parse_args(argv)
    if args.command == "assign":
        for path in args.notebooks:
            notebook = nbformat.read(path, as_version=4)
            assign(notebook)
            nbformat.write(notebook, path)
            print(f"{path}: {len(screens(notebook))} screens")
    else:
        paths = args.notebooks or sorted(Path("notebooks").glob("[0-9][0-9]_*.ipynb"))
        for path in paths:
            print(export(path, args.output_dir))


if __name__ == "__main__":
    _main()
