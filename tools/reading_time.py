"""How long each notebook takes a learner working alone, estimated from what it holds.

    python -m tools.reading_time            # the table, per notebook
    python -m tools.reading_time --readme   # also rewrite the README's list of notebooks
    python -m tools.reading_time --fit      # the estimate against learners' timed runs

A notebook has three parts, in this order, told apart by their headings:

- the **main line**: everything before the ``## Exercises`` heading;
- the **exercises**: from that heading to the first ``## Optional: ...`` heading;
- the **optional parts**: each under a heading ``## Optional: ...``, after the exercises.

Cells a learner does not read are left out of every count: the Colab setup cell (tag
``colab-setup``) and the lecturer's notes (slide type ``notes``).

The estimate, in minutes, of a part:

    words / WORDS_PER_MINUTE + code lines * MINUTES_PER_CODE_LINE
    + widgets * MINUTES_PER_WIDGET
    + for each exercise: MINUTES_PER_EXERCISE + lines to write * MINUTES_PER_LINE_TO_WRITE

where words are the markdown's words, code lines the code cells' lines that are neither
blank nor comments, widgets the code cells that show one (an explorer, a training
monitor: a learner plays with it), and an exercise's lines to write the code lines of its
solution (``solutions/<notebook>/``) that its cells do not already give (a skeleton's
``def`` and ``class`` lines, a given helper's call). So a function of a few lines counts
about 6 minutes and a class of 30 lines about 25, as learners took; a skeleton that
names the steps makes an exercise shorter by the lines it gives.

The rates were fitted (least squares, with the reading rates held at round figures) to
learners' timed runs, main line plus exercises, each a learner who knows Python and basic
PyTorch, new to attention, working alone: the nine notebooks at commit bff0236 (``TIMED``,
below) and the course's eight-notebook form at 1d0a351^ (its 06 held today's 06 and 07);
later reads of 06 and 07 (a316634), of 08 and 09 (f96f73b), and two reads each of 06 and
08 (b383bf4) and of 07 and 09 (d2416c3) were added without a refit.
``python -m tools.reading_time --fit`` measures those commits again (``git show``) and
prints the error: on the 25 runs 9.3 min root mean square, 23 at worst. The later reads of
06 to 09 took longer than the estimate, all but one (by 5 to 23 minutes): learners stalled on
dense cells and code used before it is shown, which the counts do not see (09 at f96f73b
and 07 at a316634 have the same counts and took 88 and 61 minutes). A least-squares refit
on the 25 runs only trades words for exercises (about 10 minutes an exercise, a third of
the reading rate) and is still off by 6.6 at root mean square, 13 at worst: no refit; the
rates stay, and the notebooks change until learners meet them.
Reading is slow because the prose is technical and asks for
predictions; a code line counts for what it takes to read it, run it and read its output.
An estimate, not a promise.
"""

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools import course

WORDS_PER_MINUTE = 100
MINUTES_PER_CODE_LINE = 0.1
MINUTES_PER_WIDGET = 3.5
MINUTES_PER_EXERCISE = 2.5
MINUTES_PER_LINE_TO_WRITE = 0.8
# The targets: each notebook's main line and exercises in one sitting of at most 65 minutes,
# a main line of at most about 70 cells, the main path (the main lines, one after another)
# in about 7 hours.
SITTING_MINUTES = 65
# Learners' minutes, main line plus exercises, and the commit they were timed at (the
# names are the notebooks' files there). Read by --fit.
TIMED = {
    "bff0236": {"01_self_attention": 60, "02_causal_masking": 62, "03_dropout": 55,
                "04_causal_attention_class": 48, "05_multi_head_attention": 60,
                "06_padding_masks": 100, "07_pytorch_attention": 70, "08_tiny_gpt": 78,
                "09_generation_kv_cache": 80},
    "1d0a351^": {"01_self_attention": 55, "02_causal_masking": 75, "03_dropout": 55,
                 "04_causal_attention_class": 50, "05_multi_head_attention": 65,
                 "06_padding_masks": 110, "08_tiny_gpt": 70, "09_generation_kv_cache": 90},
    "a316634": {"06_padding_masks": 72, "07_pytorch_attention": 61},
    "f96f73b": {"08_tiny_gpt": 80, "09_generation_kv_cache": 88},
    "b383bf4": {"06_padding_masks": 80, "08_tiny_gpt": 66},  # two reads each, averaged
    "d2416c3": {"07_pytorch_attention": 75, "09_generation_kv_cache": 75},
    "7fbb6ad": {"06_padding_masks": 77, "07_pytorch_attention": 66,
                "09_generation_kv_cache": 73},  # two reads each (83 and 71, 67 and 64, 76 and 70)
    "c4ff7bf": {"06_padding_masks": 73},  # 73 and 73
    "fb9f393": {"06_padding_masks": 68, "09_generation_kv_cache": 67},  # 72 and 64; 67 and 66
    "e52d287": {"06_padding_masks": 72},  # 73 and 72
    "2b78be1": {"06_padding_masks": 60},  # 60 and 60, after exercise 1 went
}
MAIN_LINE_CELLS = 70
MAIN_PATH_HOURS = 7

README = course.ROOT / "README.md"
LIST_START = "<!-- The list below is written by `python -m tools.reading_time --readme`. -->"
LIST_END = "<!-- End of the list. -->"

EXERCISES_HEADING = re.compile(r"##\s+Exercises\b")
OPTIONAL_HEADING = re.compile(r"##\s+Optional:")
WORD_MARKUP = re.compile(r"[`*_$#|]")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@dataclass
class Part:
    """What one part of a notebook holds."""

    cells: int = 0
    words: int = 0
    code_cells: int = 0
    code_lines: int = 0
    widgets: int = 0  # code cells that show a widget
    exercises: int = 0
    lines_to_write: int = 0  # over all its exercises

    @property
    def minutes(self) -> float:
        return (self.words / WORDS_PER_MINUTE + self.code_lines * MINUTES_PER_CODE_LINE
                + self.widgets * MINUTES_PER_WIDGET + self.exercises * MINUTES_PER_EXERCISE
                + self.lines_to_write * MINUTES_PER_LINE_TO_WRITE)


@dataclass
class NotebookTime:
    """A notebook's three parts: main line, exercises, optional parts."""

    name: str
    main: Part
    exercises: Part
    optional: Part

    @property
    def sitting_minutes(self) -> float:
        """The main line and the exercises: one sitting."""
        return self.main.minutes + self.exercises.minutes


def is_read(cell) -> bool:
    """Whether a learner reads this cell: not the Colab setup cell, not a lecturer's note."""
    if "colab-setup" in cell.metadata.get("tags", []):
        return False
    return cell.metadata.get("slideshow", {}).get("slide_type") != "notes"


def part_of(cell, current: str) -> str:
    """The part a cell starts, given the part the cells before it are in."""
    if cell.cell_type != "markdown":
        return current
    if EXERCISES_HEADING.match(cell.source):
        return "exercises"
    if OPTIONAL_HEADING.match(cell.source):
        return "optional"
    return current


def code_lines(source) -> int:
    """Lines of code (a text, or its lines), not counting blank lines and comments."""
    lines = source.splitlines() if isinstance(source, str) else source
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def shows_a_widget(cell) -> bool:
    """Whether a code cell's stored output is a live widget."""
    return any(WIDGET_VIEW in output.get("data", {}) for output in cell.get("outputs", []))


def measure(path) -> NotebookTime:
    """Count what each part of the notebook at ``path`` holds; its exercises' solutions are
    in ``solutions/<notebook>/`` beside its folder."""
    path = Path(path)
    solutions = path.parent.parent / "solutions" / path.stem
    return measure_notebook(path.stem, nbformat.read(path, as_version=4),
                            [file.read_text() for file in sorted(solutions.glob("*.py"))])


def measure_notebook(name: str, notebook, solutions: list) -> NotebookTime:
    """Count what each part of ``notebook`` holds; ``solutions`` are its exercises'
    solutions (the text of each file), whose lines that the exercises' cells do not give
    are the lines to write."""
    parts = {"main": Part(), "exercises": Part(), "optional": Part()}
    given = set()  # the exercises' code lines, stripped
    current = "main"
    for cell in notebook.cells:
        current = part_of(cell, current)
        if not is_read(cell):
            continue
        part = parts[current]
        part.cells += 1
        if cell.cell_type == "markdown":
            part.words += len(WORD_MARKUP.sub(" ", cell.source).split())
            if current == "exercises" and cell.source.startswith("### "):
                part.exercises += 1
        elif cell.cell_type == "code":
            part.code_cells += 1
            part.code_lines += code_lines(cell.source)
            part.widgets += shows_a_widget(cell)
            if current == "exercises":
                given |= {line.strip() for line in cell.source.splitlines()}
    parts["exercises"].lines_to_write = sum(
        code_lines(line for line in solution.splitlines() if line.strip() not in given)
        for solution in solutions)
    return NotebookTime(name, parts["main"], parts["exercises"], parts["optional"])


def measure_course() -> list:
    """Every notebook of the course, in order, measured."""
    return [measure(course.ROOT / path) for path in course.notebook_paths()]


def table(times) -> str:
    """A plain-text table: cells, words, code lines and minutes, per notebook and part."""
    header = (f"{'notebook':<26} {'main':>5} {'exer.':>5} {'opt.':>5} {'words':>6} "
              f"{'code':>5} {'to write':>8} {'main':>6} {'exer.':>6} {'sitting':>8} "
              f"{'optional':>9}")
    lines = ["cells per part; words and code lines of main line + exercises, the lines the "
             "exercises' solutions add; minutes", header]
    for time in times:
        main, exercises, optional = time.main, time.exercises, time.optional
        lines.append(f"{time.name:<26} {main.cells:>5} {exercises.cells:>5} "
                     f"{optional.cells:>5} {main.words + exercises.words:>6} "
                     f"{main.code_lines + exercises.code_lines:>5} "
                     f"{exercises.lines_to_write:>8} {main.minutes:>4.0f} m "
                     f"{exercises.minutes:>4.0f} m {time.sitting_minutes:>6.0f} m "
                     f"{optional.minutes:>7.0f} m")
    total = sum(time.sitting_minutes for time in times)
    optional_total = sum(time.optional.minutes for time in times)
    lines.append(f"{'all nine':<26} {'':>5} {'':>5} {'':>5} {'':>6} {'':>5} {'':>8} "
                 f"{'':>6} {'':>6} {total / 60:>6.1f} h {optional_total / 60:>7.1f} h")
    lines.append(f"main path (the main lines alone): {main_path_hours(times):.1f} h")
    lines.append(f"rates: {WORDS_PER_MINUTE} words a minute, {MINUTES_PER_CODE_LINE} min a "
                 f"code line, {MINUTES_PER_WIDGET} min a widget, an exercise "
                 f"{MINUTES_PER_EXERCISE} min + {MINUTES_PER_LINE_TO_WRITE} min a line to "
                 "write")
    return "\n".join(lines)


def timed_notebooks(commit: str, names: list) -> list:
    """The notebooks ``names`` as they were at ``commit``, measured (read with git)."""
    def show(path):
        return subprocess.run(["git", "show", f"{commit}:{path}"], cwd=course.ROOT,
                              check=True, capture_output=True, text=True).stdout

    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "solutions"],
                            cwd=course.ROOT, check=True, capture_output=True, text=True)
    measured = []
    for name in names:
        solutions = [show(path) for path in listed.stdout.split()
                     if path.startswith(f"solutions/{name}/") and path.endswith(".py")]
        notebook = nbformat.reads(show(f"notebooks/{name}.ipynb"), as_version=4)
        measured.append(measure_notebook(name, notebook, solutions))
    return measured


def fit_report(timed: dict = TIMED) -> str:
    """The estimate beside the learners' minutes at each commit of ``timed``, and its
    error (root mean square and worst), per commit and over all."""
    lines, errors = [], []
    for commit, minutes in timed.items():
        found = []
        for time in timed_notebooks(commit, list(minutes)):
            error = time.sitting_minutes - minutes[time.name]
            found.append(error)
            lines.append(f"{commit:<9} {time.name:<26} learners {minutes[time.name]:>4} "
                         f"estimate {time.sitting_minutes:>4.0f}  {error:+4.0f}")
        lines.append(f"{commit}: {error_summary(found)}")
        errors += found
    lines.append(f"all {len(errors)}: {error_summary(errors)}")
    return "\n".join(lines)


def error_summary(errors: list) -> str:
    root_mean_square = (sum(error * error for error in errors) / len(errors)) ** 0.5
    return (f"off by {root_mean_square:.1f} min (root mean square), "
            f"{max(abs(error) for error in errors):.0f} at worst")


def main_path_hours(times) -> float:
    """The main lines of every notebook, one after another, in hours."""
    return sum(time.main.minutes for time in times) / 60


def five(minutes: float) -> int:
    """Minutes to the nearest 5, at least 5: an estimate says no more."""
    return max(5, round(minutes / 5) * 5)


def readme_list(times) -> str:
    """The README's list of notebooks: link, what it teaches, and its times: the main line,
    the exercises, the optional parts."""
    summaries = {notebook.name: notebook.summary for notebook in course.notebooks()}
    lines = []
    for number, time in enumerate(times, start=1):
        path = f"notebooks/{time.name}.ipynb"
        when = f"{five(time.main.minutes)} min + {five(time.exercises.minutes)} exercises"
        if time.optional.cells:
            when += f" + {five(time.optional.minutes)} optional"
        lines.append(f"{number}. [`{path}`]({path}): {summaries[time.name]} *({when})*")
    total = sum(time.sitting_minutes for time in times) / 60
    optional = sum(time.optional.minutes for time in times) / 60
    lines.append("")
    lines.append(f"One sitting each, at most about {SITTING_MINUTES} minutes with the "
                 f"exercises: {main_path_hours(times):.1f} hours of main lines, {total:.1f} "
                 f"with exercises, optional parts {optional:.1f} more (estimates: "
                 "`python -m tools.reading_time`).")
    return "\n".join(lines)


def with_readme_list(readme: str, times) -> str:
    """The README's text with its list of notebooks rewritten."""
    before, rest = readme.split(LIST_START, 1)
    _, after = rest.split(LIST_END, 1)
    return f"{before}{LIST_START}\n{readme_list(times)}\n{LIST_END}{after}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", action="store_true",
                        help="rewrite the README's list of notebooks with these times")
    parser.add_argument("--fit", action="store_true",
                        help="the estimate against learners' timed runs at the commits they "
                             "were timed at (needs the repository's history)")
    args = parser.parse_args(argv)
    if args.fit:
        print(fit_report())
        return
    times = measure_course()
    print(table(times))
    if args.readme:
        README.write_text(with_readme_list(README.read_text(encoding="utf-8"), times),
                          encoding="utf-8")
        print(f"rewrote the list of notebooks in {README.name}", file=sys.stderr)


if __name__ == "__main__":
    main()
