"""Lecture slides from the notebooks: slide metadata, the layout rules, the export.

Every cell carries ``metadata.slideshow.slide_type``, read by JupyterLab's RISE extension
(live slides) and by ``jupyter nbconvert --to slides`` (reveal.js HTML):

- ``slide`` starts a new slide (each ``#``/``##`` heading), ``subslide`` a new screen below
  it (each ``###`` heading, or where the previous screen is full);
- ``-`` continues the current screen, ``fragment`` appears on the next key press;
- ``notes`` is shown only in the speaker view, ``skip`` is left out (set by hand, kept).

The layout rules, for a 1280 x 720 slide read from the back of a room:

- a heading starts a slide or a screen, so a markdown cell holds at most one, on its first
  line (``split`` cuts a cell at its other headings);
- no screen is taller than the slide, by the height estimate below;
- a lead-in (a markdown cell whose text ends with ":") is on the same screen as the code
  cell it introduces;
- at most MAX_SCREENS_PER_SLIDE screens under one slide: in a longer section each ``###``
  heading starts a slide of its own, and what is still too long continues on a new slide;
- no shown code line is longer than CODE_LINE_CHARS characters, no printed line longer
  than OUTPUT_LINE_CHARS: they fit the slide unwrapped (a browser test measures both
  budgets from the deck's code font).

    python -m tools.slides check [NOTEBOOK ...]    # every rule broken, per notebook
    python -m tools.slides split NOTEBOOK ...      # one heading per markdown cell
    python -m tools.slides assign NOTEBOOK ...     # (re)write the slide types
    python -m tools.slides export --output-dir build/slides    # the offline deck

``assign`` follows the rules it can follow by metadata alone; ``check`` lists what needs an
edit (a long line, a cell taller than the slide, a heading inside a cell). ``export``
writes every notebook's reveal.js HTML with its scripts next to it (``tools/deck.py``).

The height estimate follows the sizes of nbconvert's slide template (20 px text with a 1.6
line height, 19 px code, pictures at their own pixel size) on a 1280 px wide slide; it errs
on the tall side. RISE shows the same screens on a 1280 x 720 canvas (RISE_SETTINGS).
"""

import argparse
import base64
import io
import math
import sys
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import mistune
import nbformat
from PIL import Image

from tools import course

SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
# What ``assign`` fills a screen up to, by the estimate below: measured in Chromium, the
# estimate is within a few percent; the margin absorbs the rest.
SCREEN_BUDGET = 690
SLIDE_TYPES = ("slide", "subslide", "-", "fragment", "notes", "skip")
HAND_SET = ("fragment", "notes", "skip")  # kept by ``assign``
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"  # a live widget's output
MAX_SCREENS_PER_SLIDE = 6
# The longest line shown whole on a slide, in characters of the deck's 19 px monospace
# font: a code cell's column (1280 px less the prompt and paddings) holds 99 of them, a
# printed output's (90 % as wide) 87 (measured in Chromium with DejaVu Sans Mono by
# tests/browser/test_offline_deck.py); two spare for wider monospace fonts.
CODE_LINE_CHARS = 97
OUTPUT_LINE_CHARS = 85
# Live slides (RISE in JupyterLab, Alt+R) on the same 1280 x 720 canvas; scrolling only
# as a safety net. JupyterLab's 14 px notebook text would stay 14 px in RISE:
# notebooks/rise.css, which RISE reads from the notebooks' folder, sets the deck's sizes
# (20 px prose, 19 px code; tests/browser/test_rise_slides.py measures them).
RISE_SETTINGS = {"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT, "scroll": True,
                 "start_slideshow_at": "selected"}

TEXT_LINE_PX, TEXT_CHARS_PER_LINE = 32, 100
CODE_LINE_PX = 26
HEADING_PX = {1: 90, 2: 70, 3: 56, 4: 44}
PARAGRAPH_GAP_PX = 16
DISPLAY_MATH_PX = 64
CELL_PADDING_PX = 36
WIDGET_PX = 640  # a live explorer: its controls above a figure

if "atx_heading" not in getattr(mistune.BlockParser, "SPECIFICATION", {}):  # 3.0 wrote "axt"
    raise ImportError(f"tools.slides needs mistune 3.1 or later, this is {mistune.__version__}: "
                      "pip install --upgrade mistune")


class _HeadingLines(mistune.BlockParser):
    """mistune's block parser (nbconvert's Markdown parser), which also notes on each heading
    at the top level of a cell (not in a quote or a list) the lines it spans, from 0: its
    syntax tree carries no positions, and ``split`` cuts cells at these lines."""

    def parse_atx_heading(self, m, state):
        end = super().parse_atx_heading(m, state)
        if state.depth() == 0:
            line = state.src.count("\n", 0, m.start())
            state.last_token()["lines"] = (line, line)
        return end

    def parse_setex_heading(self, m, state):
        """A paragraph's lines, then a line of = or -, become a heading."""
        paragraph = state.last_token()
        end = super().parse_setex_heading(m, state)
        if state.depth() == 0 and paragraph is not None and paragraph is state.last_token() \
                and paragraph["type"] == "heading":
            underline = state.src.count("\n", 0, m.start())
            paragraph["lines"] = (underline - len(paragraph["text"].splitlines()), underline)
        return end


# CommonMark, with display maths ($$ ... $$) as one block: a line of it is no heading.
_MARKDOWN = mistune.Markdown(block=_HeadingLines(), plugins=[mistune.import_plugin("math")])


def slide_type(cell) -> str:
    return cell.metadata.get("slideshow", {}).get("slide_type", "-")


def shown(cell) -> bool:
    """Whether the cell is on a screen (not a speaker note, not skipped)."""
    return slide_type(cell) not in ("notes", "skip")


def _heading_spans(source: str) -> list:
    """(first line, last line, level) of every heading of a markdown cell, as mistune parses
    it: not in code blocks or display maths, nor inside a quote or a list."""
    tokens, _state = _MARKDOWN.parse(source)
    return [(*token["lines"], token["attrs"]["level"]) for token in tokens
            if token["type"] == "heading"]


def headings(source: str) -> list:
    """(line number, level, text) of every heading in markdown (``#`` lines and underlined
    ones, outside code blocks and display maths); text is the heading's first line, stripped.
    Line numbers count from 0 in ``source``."""
    lines = source.splitlines()
    return [(first, level, lines[first].strip()) for first, _last, level in _heading_spans(source)]


def _first_line_number(source: str) -> int:
    lines = source.splitlines()
    return next((number for number, line in enumerate(lines) if line.strip()), 0)


def heading_level(cell) -> int | None:
    """The level of the heading a markdown cell starts with, or None."""
    if cell.cell_type != "markdown":
        return None
    found = headings(cell.source)
    if found and found[0][0] == _first_line_number(cell.source):
        return found[0][1]
    return None


def mid_cell_headings(cell) -> list:
    """(line number, heading) of each heading not on a markdown cell's first line."""
    if cell.cell_type != "markdown":
        return []
    first = _first_line_number(cell.source)
    return [(number, text) for number, _level, text in headings(cell.source) if number != first]


def is_lead_in(cell) -> bool:
    """A markdown cell that introduces what follows: its text ends with a colon."""
    return cell.cell_type == "markdown" and cell.source.rstrip().endswith(":")


def _wrapped_lines(text: str, chars_per_line: int) -> int:
    return sum(max(1, math.ceil(len(line) / chars_per_line)) for line in text.splitlines())


def _markdown_height(source: str) -> int:
    height, in_math = 0, False
    heading_px = {}  # line number -> its height: a heading's first line, 0 for the others
    for first, last, level in _heading_spans(source):
        heading_px.update({number: 0 for number in range(first + 1, last + 1)})
        heading_px[first] = HEADING_PX.get(level, 40)
    lines = source.splitlines()
    written = [number for number, line in enumerate(lines) if line.strip()]
    for number in range(written[0], written[-1] + 1) if written else ():
        stripped = lines[number].strip()
        if stripped.startswith("$$"):
            if not in_math or stripped != "$$":
                height += DISPLAY_MATH_PX
            in_math = not in_math if stripped == "$$" else in_math
        elif in_math:
            continue
        elif not stripped:
            height += PARAGRAPH_GAP_PX
        elif number in heading_px:
            height += heading_px[number]
        elif stripped.startswith("|") and set(stripped) <= set("|-: "):
            continue  # a table's rule line draws no row
        else:
            height += _wrapped_lines(stripped, TEXT_CHARS_PER_LINE) * TEXT_LINE_PX
    return height


def _png_height(data: str) -> int:
    """The height in pixels of a base64 PNG (Pillow reads only its header)."""
    return Image.open(io.BytesIO(base64.b64decode(data))).height


def output_text(output) -> str:
    """The text an output shows in a monospace block ("" for pictures and widgets)."""
    if output.output_type == "stream":
        return output.text
    data = output.get("data", {})
    if WIDGET_VIEW in data or "image/png" in data \
            or "text/html" in data:
        return ""
    if output.output_type == "error":
        return ""  # a course notebook shows no traceback on a slide
    return data.get("text/plain", "")


def _output_height(output) -> int:
    data = output.get("data", {})
    if WIDGET_VIEW in data:
        return WIDGET_PX
    if "image/png" in data:
        return _png_height(data["image/png"])
    return _wrapped_lines(output_text(output), CODE_LINE_CHARS) * CODE_LINE_PX


def cell_height(cell) -> int:
    """Estimated height in slide pixels of a cell and its outputs."""
    if cell.cell_type == "markdown":
        return _markdown_height(cell.source) + CELL_PADDING_PX
    if cell.cell_type != "code":
        return 0
    height = _wrapped_lines(cell.source, CODE_LINE_CHARS) * CODE_LINE_PX + CELL_PADDING_PX
    return height + sum(_output_height(output) for output in cell.get("outputs", []))


LINE_LIMITS = {"source": CODE_LINE_CHARS, "output": OUTPUT_LINE_CHARS}


def long_lines(cell) -> list:
    """("source" or "output", line number, length) of each code line of a code cell longer
    than CODE_LINE_CHARS, and of each printed line longer than OUTPUT_LINE_CHARS."""
    if cell.cell_type != "code":
        return []
    found = [("source", number, len(line))
             for number, line in enumerate(cell.source.splitlines())
             if len(line) > CODE_LINE_CHARS]
    for output in cell.get("outputs", []):
        found += [("output", number, len(line))
                  for number, line in enumerate(output_text(output).splitlines())
                  if len(line) > OUTPUT_LINE_CHARS]
    return found


def screens(notebook) -> list[list[int]]:
    """The cells (indices) on each screen, in order: a new one at every slide/subslide."""
    result = []
    for index, cell in enumerate(notebook.cells):
        if not shown(cell):
            continue
        if slide_type(cell) in ("slide", "subslide") or not result:
            result.append([])
        result[-1].append(index)
    return result


def slides(notebook) -> list[list[list[int]]]:
    """The screens (lists of cell indices) under each slide, in order."""
    result = []
    for screen in screens(notebook):
        if slide_type(notebook.cells[screen[0]]) == "slide" or not result:
            result.append([])
        result[-1].append(screen)
    return result


def screen_heights(notebook) -> list[int]:
    return [sum(cell_height(notebook.cells[index]) for index in screen)
            for screen in screens(notebook)]


def _screen_starts(notebook) -> dict:
    """Pass 1 of ``assign``: which shown cells start a screen, and whether at a section
    heading ("slide") or not ("subslide"); every other shown cell maps to "-"."""
    starts, used, previous = {}, None, None
    for index, cell in enumerate(notebook.cells):
        if not shown(cell):
            continue
        height, level = cell_height(cell), heading_level(cell)
        if used is None or (level is not None and level <= 2):
            starts[index] = "slide"
        elif level is not None or used + height > SCREEN_BUDGET:
            starts[index] = "subslide"
            lead = notebook.cells[previous]
            if (cell.cell_type == "code" and level is None and is_lead_in(lead)
                    and starts[previous] == "-"
                    and cell_height(lead) + height <= SCREEN_BUDGET):
                # The lead-in goes with its code onto the new screen.
                starts[previous], starts[index] = "subslide", "-"
                used = cell_height(lead)
        else:
            starts[index] = "-"
        if starts[index] != "-":
            used = 0
        used += height
        previous = index
    return starts


def _cap_screens_per_slide(notebook, starts: dict) -> None:
    """Pass 2 of ``assign``: a section of more than MAX_SCREENS_PER_SLIDE screens gets its
    ``###`` headings as slides, and every run still too long a new slide after
    MAX_SCREENS_PER_SLIDE screens."""
    sections, current = [], None
    for index, kind in starts.items():
        if kind == "slide":
            current = []
            sections.append(current)
        if kind != "-":
            current.append(index)
    for section in sections:
        if len(section) <= MAX_SCREENS_PER_SLIDE:
            continue
        for index in section[1:]:
            if heading_level(notebook.cells[index]) is not None:
                starts[index] = "slide"
        run = 0
        for index in section:
            run = 1 if starts[index] == "slide" else run + 1
            if run > MAX_SCREENS_PER_SLIDE:
                starts[index], run = "slide", 1


def assign(notebook) -> None:
    """Set every cell's slide type by the layout rules (see the module's docstring).

    Types set by hand (fragment, notes, skip) stay; a fragment that starts a screen becomes
    that screen's start. Also sets the notebook's RISE settings.
    """
    notebook.metadata["rise"] = dict(RISE_SETTINGS)
    starts = _screen_starts(notebook)
    _cap_screens_per_slide(notebook, starts)
    for index, new in starts.items():
        cell = notebook.cells[index]
        if new == "-" and slide_type(cell) == "fragment":
            new = "fragment"
        cell.metadata.setdefault("slideshow", {})["slide_type"] = new


def split(notebook) -> int:
    """Cut every shown markdown cell at each heading that is not on its first line, so that
    each heading can start a slide. The first part keeps the cell's id and metadata; the
    others get new ids and the same metadata but for the slide type. Returns how many
    cells were added."""
    cells, added = [], 0
    for cell in notebook.cells:
        cuts = [number for number, _text in mid_cell_headings(cell)] if shown(cell) else []
        if not cuts:
            cells.append(cell)
            continue
        lines = cell.source.splitlines()
        bounds = [0, *cuts, len(lines)]
        parts = ["\n".join(lines[start:end]).strip("\n") for start, end in pairwise(bounds)]
        cell.source = parts[0]
        cells.append(cell)
        for part in parts[1:]:
            new = nbformat.v4.new_markdown_cell(part)
            new.metadata = {key: value for key, value in cell.metadata.items()
                            if key != "slideshow"}
            cells.append(new)
            added += 1
    notebook.cells = cells
    return added


@dataclass
class Violation:
    rule: str  # "long line", "mid-cell heading", "lead-in apart", "screens per slide",
    #            "tall screen"
    cell: int  # the index of the (first) cell concerned
    detail: str

    def __str__(self):
        return f"cell {self.cell}: {self.rule}: {self.detail}"


def check(notebook) -> list:
    """Every layout rule the notebook breaks, as it is (its slide types as saved)."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if not shown(cell):
            continue
        for where, number, length in long_lines(cell):
            found.append(Violation("long line", index, f"{where} line {number + 1} has {length} "
                                   f"characters (at most {LINE_LIMITS[where]})"))
        for number, text in mid_cell_headings(cell):
            found.append(Violation("mid-cell heading", index,
                                   f"line {number + 1} {text!r}: split the cell there"))
    screen_of = {index: number for number, screen in enumerate(screens(notebook))
                 for index in screen}
    shown_cells = [index for index, cell in enumerate(notebook.cells) if shown(cell)]
    for index, following in pairwise(shown_cells):
        if is_lead_in(notebook.cells[index]) and notebook.cells[following].cell_type == "code" \
                and screen_of[index] != screen_of[following]:
            found.append(Violation("lead-in apart", index,
                                   f"ends with ':' but its code (cell {following}) is on the "
                                   "next screen"))
    for section in slides(notebook):
        if len(section) > MAX_SCREENS_PER_SLIDE:
            found.append(Violation("screens per slide", section[0][0],
                                   f"{len(section)} screens under one slide (at most "
                                   f"{MAX_SCREENS_PER_SLIDE})"))
    for screen, height in zip(screens(notebook), screen_heights(notebook), strict=True):
        limit = SLIDE_HEIGHT if len(screen) == 1 else SCREEN_BUDGET
        if height > limit:
            found.append(Violation("tall screen", screen[0], f"cells {screen} are about "
                                   f"{height} px tall (at most {limit})"))
    return sorted(found, key=lambda violation: violation.cell)


def exporter(offline: bool = False):
    """nbconvert's reveal.js exporter, set to a 1280 x 720 projector; ``offline`` loads
    everything from ``assets/`` next to the HTML (``tools/deck.py``) instead of CDNs."""
    from nbconvert import SlidesExporter

    if offline:
        from tools import deck

        slides = SlidesExporter(**deck.template_options())
        deck.configure(slides)
    else:
        slides = SlidesExporter()
    slides.reveal_width, slides.reveal_height = str(SLIDE_WIDTH), str(SLIDE_HEIGHT)
    slides.reveal_scroll = True  # a safety net; the course keeps every screen in bounds
    slides.reveal_number = "c/t"
    return slides


def without_live_widgets(notebook):
    """A copy of the notebook whose cells that show a live widget are skipped: an exported
    deck has no kernel, so an explorer's controls would move and change nothing. Each
    explorer's static picture (the cell before it, ``explorer.picture()``) stays."""
    copy = nbformat.from_dict(notebook)
    for cell in copy.cells:
        if cell.cell_type == "code" and any(WIDGET_VIEW in output.get("data", {})
                                            for output in cell.get("outputs", [])):
            cell.metadata.setdefault("slideshow", {})["slide_type"] = "skip"
    return copy


def export(notebook_path: Path, output_dir: Path, offline: bool = False) -> Path:
    """Write the notebook's slides as ``<name>.slides.html`` in output_dir, live widgets
    left out (``without_live_widgets``). Offline, the assets must be in
    ``output_dir/assets`` (``export_deck`` puts them there)."""
    notebook = without_live_widgets(nbformat.read(notebook_path, as_version=4))
    body, _ = exporter(offline).from_notebook_node(notebook)
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / f"{Path(notebook_path).stem}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target


def export_deck(notebook_paths, output_dir: Path,
                assets_prefix: Path = Path("build/slides-assets")) -> list:
    """The offline deck: the pinned assets installed (npm) and copied to
    ``output_dir/assets``, then every notebook's slides next to them."""
    from tools import deck

    deck.copy_assets(deck.install(assets_prefix), output_dir)
    return [export(path, output_dir, offline=True) for path in notebook_paths]


def course_notebooks() -> list:
    """The course's notebooks in order (course.toml), relative to the working folder."""
    return [Path(path) for path in course.notebook_paths()]


def _main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.slides", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    checking = commands.add_parser("check", help="list the layout rules each notebook breaks")
    checking.add_argument("notebooks", nargs="*", type=Path)
    splitting = commands.add_parser("split", help="split markdown cells at their headings")
    splitting.add_argument("notebooks", nargs="+", type=Path)
    assigning = commands.add_parser("assign", help="(re)write the slide types of notebooks")
    assigning.add_argument("notebooks", nargs="+", type=Path)
    exporting = commands.add_parser("export", help="export notebooks as reveal.js slides")
    exporting.add_argument("notebooks", nargs="*", type=Path)
    exporting.add_argument("--output-dir", type=Path, default=Path("build/slides"))
    exporting.add_argument("--online", action="store_true",
                           help="load reveal.js, MathJax and the rest from CDNs (no npm)")
    args = parser.parse_args(argv)
    paths = getattr(args, "notebooks", None) or course_notebooks()
    if args.command == "check":
        total = 0
        for path in paths:
            violations = check(nbformat.read(path, as_version=4))
            total += len(violations)
            print(f"{path}: {len(violations) or 'no'} violation(s)")
            for violation in violations:
                print(f"  {violation}")
        return 1 if total else 0
    if args.command in ("split", "assign"):
        for path in paths:
            notebook = nbformat.read(path, as_version=4)
            if args.command == "split":
                print(f"{path}: {split(notebook)} cell(s) added")
            else:
                assign(notebook)
                print(f"{path}: {len(screens(notebook))} screens")
            nbformat.write(notebook, path)
        return 0
    if args.online:
        for path in paths:
            print(export(path, args.output_dir))
    else:
        for target in export_deck(paths, args.output_dir):
            print(target)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
