"""The reading-time estimate, the README's list of notebooks it writes, and the shape every
notebook keeps: a main line of one sitting, then the exercises, then the optional parts."""

import re

import nbformat
import pytest

from tools import course, reading_time
from tools.reading_time import (
    MAIN_LINE_CELLS,
    MAIN_PATH_HOURS,
    SITTING_MINUTES,
)

NOTEBOOKS = course.notebooks()
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth")
NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
LECTURER_TALK = re.compile(r"Speaker notes|[Ii]n class\b|ask the room|show of hands|"
                           r"test machine")


def markdown(source, **metadata):
    return nbformat.v4.new_markdown_cell(source, metadata=metadata)


def code(source, **metadata):
    return nbformat.v4.new_code_cell(source, metadata=metadata)


@pytest.fixture
def small_notebook(tmp_path):
    shown = code("explorer")
    shown.outputs = [nbformat.v4.new_output(
        "display_data", data={reading_time.WIDGET_VIEW: {"model_id": "abc"}})]
    notebook = nbformat.v4.new_notebook(cells=[
        markdown("# 1. A title\n\nfour words of prose"),
        code("!pip install something", tags=["colab-setup"]),
        code("x = 1  # a comment\n\n# a comment line\ny = 2"),
        shown,
        markdown("**For the lecturer.** not read", slideshow={"slide_type": "notes"}),
        markdown("## Exercises"),
        markdown("### Exercise 1: one"),
        code("def f():\n    pass"),
        markdown("### Exercise 2: two"),
        markdown("## Optional: a detour"),
        code("z = 3"),
    ])
    path = tmp_path / "notebooks" / "01_small.ipynb"
    path.parent.mkdir()
    nbformat.write(notebook, path)
    solutions = tmp_path / "solutions" / "01_small"
    solutions.mkdir(parents=True)
    # the def line is given by the exercise's cell: two lines to write, and a comment
    (solutions / "f.py").write_text("def f():\n    # a comment\n    x = 1\n    return x\n")
    return path


def test_each_part_counts_its_cells_words_and_code_lines(small_notebook):
    time = reading_time.measure(small_notebook)
    assert (time.main.cells, time.main.words, time.main.code_lines) == (3, 7, 3)
    assert time.main.widgets == 1
    assert (time.exercises.cells, time.exercises.exercises, time.exercises.code_lines) == (4, 2, 2)
    assert time.exercises.lines_to_write == 2
    assert (time.optional.cells, time.optional.code_lines) == (2, 1)


def test_the_estimate_is_the_stated_rates(small_notebook):
    time = reading_time.measure(small_notebook)
    words = time.main.words + time.exercises.words
    expected = (words / reading_time.WORDS_PER_MINUTE + 5 * reading_time.MINUTES_PER_CODE_LINE
                + reading_time.MINUTES_PER_WIDGET + 2 * reading_time.MINUTES_PER_EXERCISE
                + 2 * reading_time.MINUTES_PER_LINE_TO_WRITE)
    assert time.sitting_minutes == pytest.approx(expected)


def test_the_error_is_the_root_mean_square_and_the_worst():
    assert reading_time.error_summary([3, -4]) == (
        "off by 3.5 min (root mean square), 4 at worst")


def test_the_readme_list_is_current():
    written = reading_time.with_readme_list(reading_time.README.read_text(encoding="utf-8"),
                                            reading_time.measure_course())
    assert written == reading_time.README.read_text(encoding="utf-8"), (
        "the README's list of notebooks is out of date: run python -m tools.reading_time --readme")


def test_the_table_names_every_notebook_and_the_rates():
    text = reading_time.table(reading_time.measure_course())
    for notebook in NOTEBOOKS:
        assert notebook.name in text
    assert f"{reading_time.WORDS_PER_MINUTE} words a minute" in text


@pytest.fixture(scope="module")
def times():
    return {time.name: time for time in reading_time.measure_course()}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda notebook: notebook.name)
def test_each_notebook_fits_a_sitting(notebook, times):
    time = times[notebook.name]
    assert time.main.cells <= MAIN_LINE_CELLS, (
        f"{notebook.name}: a main line of {time.main.cells} cells; move a detour after the "
        "exercises as an optional part")
    assert time.sitting_minutes <= SITTING_MINUTES, (
        f"{notebook.name}: main line and exercises estimated at {time.sitting_minutes:.0f} min")


def test_the_main_path_fits_the_stated_hours(times):
    hours = reading_time.main_path_hours(times.values())
    assert hours <= MAIN_PATH_HOURS, f"the main lines are estimated at {hours:.1f} hours"


def headings(cells):
    """Every markdown cell's first line that is a heading of level 1 or 2."""
    return [cell.source.splitlines()[0] for cell in cells
            if cell.cell_type == "markdown" and re.match(r"#{1,2} ", cell.source)]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda notebook: notebook.name)
def test_exercises_come_after_the_main_line_and_only_optional_parts_after_them(notebook):
    found = headings(nbformat.read(course.ROOT / notebook.path, as_version=4).cells)
    exercises = [index for index, heading in enumerate(found) if heading == "## Exercises"]
    assert len(exercises) == 1, f"{notebook.name}: one '## Exercises' heading, not {exercises}"
    after = found[exercises[0] + 1:]
    strays = [heading for heading in after if not heading.startswith("## Optional: ")]
    assert strays == [], f"{notebook.name}: after the exercises come only optional parts"
    before = found[:exercises[0]]
    assert not [heading for heading in before if heading.startswith("## Optional")], (
        f"{notebook.name}: an optional part before the exercises")


@pytest.mark.parametrize("position, notebook", list(enumerate(NOTEBOOKS, start=1)),
                         ids=lambda value: getattr(value, "name", str(value)))
def test_the_introduction_says_where_the_notebook_is_and_names_its_optional_parts(position,
                                                                               notebook):
    cells = nbformat.read(course.ROOT / notebook.path, as_version=4).cells
    introduction = []  # the title cell and the markdown cells after it, up to the first code
    for cell in cells:
        if cell.cell_type != "markdown":
            break
        introduction.append(cell.source)
    first = " ".join(" ".join(introduction).split())
    assert first.startswith(f"# {position}. "), f"{notebook.name}: its title is not {position}."
    count = NUMBER_WORDS[len(NOTEBOOKS) - 1]
    assert f"the {ORDINALS[position - 1]} of {count}" in first, (
        f"{notebook.name}: the introduction should say it is the {ORDINALS[position - 1]} of "
        f"{count}")
    optional = [heading.removeprefix("## Optional: ") for heading in headings(cells)
                if heading.startswith("## Optional: ")]
    if optional:
        assert "Optional, after the exercises:" in first, (
            f"{notebook.name}: the introduction does not name its optional parts")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda notebook: notebook.name)
def test_the_learner_reads_no_words_for_a_lecturer(notebook):
    cells = nbformat.read(course.ROOT / notebook.path, as_version=4).cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        if reading_time.is_read(cell):
            found = LECTURER_TALK.search(cell.source)
            assert not found, (
                f"{notebook.name} cell {index}: {found and found.group()!r} for a lecturer")
        else:
            assert cell.source.startswith("**For the lecturer.**"), (
                f"{notebook.name} cell {index}: a notes cell starts '**For the lecturer.**'")
            assert cell.metadata.get("jupyter", {}).get("source_hidden"), (
                f"{notebook.name} cell {index}: a lecturer's note is collapsed in JupyterLab")
