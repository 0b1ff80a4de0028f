"""Lecture mode: every notebook carries slide metadata, follows the layout rules of
tools/slides.py and exports as slides that fit."""

import copy
import inspect
import re

import nbformat
import pytest

from tools.course import ROOT, notebook_paths
from tools.slides import (
    CODE_LINE_CHARS,
    MAX_SCREENS_PER_SLIDE,
    OUTPUT_LINE_CHARS,
    RISE_SETTINGS,
    SCREEN_BUDGET,
    SLIDE_HEIGHT,
    SLIDE_TYPES,
    SLIDE_WIDTH,
    WIDGET_VIEW,
    _main,
    assign,
    cell_height,
    check,
    export,
    heading_level,
    headings,
    long_lines,
    mid_cell_headings,
    screen_heights,
    screens,
    slide_type,
    slides,
    split,
    without_live_widgets,
)

NOTEBOOKS = notebook_paths()
md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell


def read(path):
    return nbformat.read(ROOT / path, as_version=4)


def violations(path, rule):
    return [str(violation) for violation in check(read(path)) if violation.rule == rule]


# --- the notebooks as they are -------------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS)
def test_every_cell_has_a_slide_type_and_headings_start_slides(path):
    notebook = read(path)
    for index, cell in enumerate(notebook.cells):
        assert slide_type(cell) in SLIDE_TYPES and "slideshow" in cell.metadata, index
        level = heading_level(cell)
        if level is not None and level <= 2:
            assert slide_type(cell) == "slide", f"cell {index}: a section heading starts a slide"
        elif level == 3:
            assert slide_type(cell) in ("slide", "subslide"), index
    assert slide_type(notebook.cells[0]) == "slide"


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_the_notebook_carries_the_rise_settings(path):
    assert read(path).metadata["rise"] == RISE_SETTINGS


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_every_notebook_has_speaker_notes(path):
    notes = [cell for cell in read(path).cells if slide_type(cell) == "notes"]
    assert notes, "a lecturer needs at least one speaker note"
    assert all(cell.cell_type == "markdown" for cell in notes)


# Each layout rule tools.slides checks, and what fixes a notebook that breaks it.
LAYOUT_RULES = {
    # By the estimate; tests/browser/test_slides_fit.py measures the exported slides.
    # Screens of several cells are filled only up to SCREEN_BUDGET, leaving room for the
    # estimate's error; a single cell cannot be split by metadata, so it gets the slide.
    "tall screen": "split a cell, or run python -m tools.slides assign on the notebook",
    # At most CODE_LINE_CHARS characters of code, OUTPUT_LINE_CHARS printed: none is cut
    # off or wrapped at 1280 x 720 (tests/browser/test_offline_deck.py measures both).
    "long line": "wrap the code, or print less per line",
    # A heading inside a cell cannot start a slide.
    "mid-cell heading": "python -m tools.slides split, then assign",
    "lead-in apart": "shorten the lead-in or its code, then python -m tools.slides assign",
    "screens per slide": "python -m tools.slides assign",
}


def test_the_layout_rules_are_the_ones_check_reports():
    reported = set(re.findall(r'Violation\("([a-z -]+)"', inspect.getsource(check)))
    assert set(LAYOUT_RULES) == reported


@pytest.mark.parametrize("rule", LAYOUT_RULES)
@pytest.mark.parametrize("path", NOTEBOOKS)
def test_the_notebook_keeps_the_layout_rule(path, rule):
    assert violations(path, rule) == [], LAYOUT_RULES[rule]


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_the_slide_types_are_what_assign_gives(path):
    """The layout is up to date: ``assign`` (after ``split``) would change nothing."""
    notebook = read(path)
    relaid = copy.deepcopy(notebook)
    split(relaid)
    assign(relaid)
    assert [(cell.source, slide_type(cell)) for cell in relaid.cells] == \
        [(cell.source, slide_type(cell)) for cell in notebook.cells]


def section_tree(html: str) -> list[int]:
    """For each outer <section> of a reveal.js page, how many sections it holds."""
    outer, depth = [], 0
    for tag in re.findall(r"<section\b|</section>", html):
        if tag == "</section>":
            depth -= 1
        else:
            if depth == 0:
                outer.append(0)
            elif depth == 1:
                outer[-1] += 1
            depth += 1
    assert depth == 0, "unbalanced sections"
    return outer


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_slides_export_has_a_section_per_slide_and_per_screen(path, tmp_path):
    notebook = without_live_widgets(read(path))  # what the deck shows
    html = export(ROOT / path, tmp_path).read_text(encoding="utf-8")
    tree = section_tree(html)
    assert len(tree) == sum(1 for cell in notebook.cells if slide_type(cell) == "slide") >= 5
    assert sum(tree) == len(screens(notebook))
    assert html.count('<aside class="notes">') == sum(
        1 for cell in notebook.cells if slide_type(cell) == "notes")
    assert "google.colab" not in html, "the Colab setup cell is skipped in the slides"


# --- the rules, on small notebooks ---------------------------------------------------

def _notebook(*cells):
    return nbformat.v4.new_notebook(cells=list(cells))


def long_code(lines=20):
    return code("\n".join(f"x{i} = {i}" for i in range(lines)))  # 20 lines: about 560 px


def notes(text="Ask the class first."):
    cell = md(text)
    cell.metadata["slideshow"] = {"slide_type": "notes"}
    return cell


def types(notebook):
    return [slide_type(cell) for cell in notebook.cells]


def test_assign_starts_slides_at_headings_and_subslides_when_full():
    notebook = _notebook(md("# Title"), md("## Part"), long_code(), long_code(), notes(),
                         md("### Detail"), md("text"))
    assign(notebook)
    assert types(notebook) == ["slide", "slide", "-", "subslide", "notes", "subslide", "-"]
    assert notebook.metadata["rise"] == RISE_SETTINGS
    assert all(height <= SCREEN_BUDGET for height in screen_heights(notebook))


def test_a_lead_in_moves_to_the_screen_of_its_code():
    # The lead-in fits under the first code; its own code does not.
    notebook = _notebook(md("## Part"), long_code(18), md("Now the weights:"), long_code())
    assign(notebook)
    assert types(notebook) == ["slide", "-", "subslide", "-"]
    assert check(notebook) == []


def test_a_paragraph_without_a_colon_stays_where_it_fits():
    notebook = _notebook(md("## Part"), long_code(18), md("The weights."), long_code())
    assign(notebook)
    assert types(notebook) == ["slide", "-", "-", "subslide"]


def test_a_lead_in_too_tall_to_share_a_screen_is_reported():
    notebook = _notebook(md("## Part"), md("Here:"), long_code(24))
    assign(notebook)
    assert types(notebook) == ["slide", "-", "subslide"]
    assert [violation.rule for violation in check(notebook)] == ["lead-in apart"]


def test_a_long_section_is_cut_at_its_headings_then_every_six_screens():
    # A code cell per screen: 4 screens, then a ### heading, then 10 more screens.
    notebook = _notebook(md("## Long"), *[long_code() for _ in range(4)], md("### Sub"),
                         *[long_code() for _ in range(10)])
    assign(notebook)
    sizes = [len(section) for section in slides(notebook)]
    assert sizes == [4, 6, 4]  # the heading starts a slide; the rest is cut after six
    assert slide_type(notebook.cells[5]) == "slide"
    assert max(sizes) <= MAX_SCREENS_PER_SLIDE
    assert [violation.rule for violation in check(notebook)] == []


def test_a_section_of_six_screens_keeps_its_subsections_below_it():
    notebook = _notebook(md("## Part"), long_code(), long_code(), md("### Sub"), long_code(),
                         long_code(), long_code(), long_code())
    assign(notebook)
    assert [len(section) for section in slides(notebook)] == [6]


def test_check_reports_too_many_screens_under_a_slide():
    cells = [md("## Part")] + [long_code() for _ in range(MAX_SCREENS_PER_SLIDE + 1)]
    notebook = _notebook(*cells)
    for cell in notebook.cells[2:]:
        cell.metadata["slideshow"] = {"slide_type": "subslide"}
    assert [violation.rule for violation in check(notebook)] == ["screens per slide"]


def test_headings_are_found_anywhere_but_in_code_and_maths():
    source = ("Some text.\n\n## A heading\n\n```python\n# a comment\n```\n\n$$\n# x\n$$\n"
              "### Another")
    assert headings(source) == [(2, 2, "## A heading"), (11, 3, "### Another")]
    assert mid_cell_headings(md(source)) == [(2, "## A heading"), (11, "### Another")]
    assert heading_level(md(source)) is None
    assert heading_level(md("\n### First\ntext")) == 3
    assert mid_cell_headings(md("### First\ntext")) == []
    assert mid_cell_headings(code("text\n# a comment")) == []


def test_headings_are_found_as_markdown_parses_them():
    """Where a scan of '#' lines went wrong: an underlined heading is a heading, a '#' line
    indented as code is code, and a fence ends only at its own marker, as long or longer."""
    source = ("Intro.\n\nA heading\n=========\n\n    # a comment in indented code\n\n"
              "~~~\n```python\n~~~\n\n````\n```\n# a comment in a fence\n````\n\n"
              "Another\n---\ntext")
    assert headings(source) == [(2, 1, "A heading"), (16, 2, "Another")]
    assert heading_level(md("Title\n=====\ntext")) == 1
    assert cell_height(md("Title\n=====")) == cell_height(md("# Title"))
    notebook = _notebook(md(source))
    assert split(notebook) == 2
    assert [cell.source.splitlines()[0] for cell in notebook.cells] == [
        "Intro.", "A heading", "Another"]


def test_split_cuts_a_markdown_cell_at_its_headings():
    first = md("Intro text.\n\n## Part\n\nBody.\n\n### Sub\nMore.")
    first.metadata["slideshow"] = {"slide_type": "subslide"}
    first.metadata["tags"] = ["keep"]
    kept_notes = notes("Notes\n\n## not a slide")
    notebook = _notebook(first, code("x = 1"), kept_notes)
    assert split(notebook) == 2
    assert [cell.source for cell in notebook.cells] == [
        "Intro text.", "## Part\n\nBody.", "### Sub\nMore.", "x = 1", "Notes\n\n## not a slide"]
    assert notebook.cells[0].id == first.id and notebook.cells[1].id != first.id
    assert notebook.cells[1].metadata == {"tags": ["keep"]}
    nbformat.validate(notebook)
    assign(notebook)
    assert types(notebook)[:3] == ["slide", "slide", "subslide"]


def test_long_lines_counts_source_and_printed_lines():
    cell = code("short\n" + "x" * (CODE_LINE_CHARS + 1))
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                           text="y" * (OUTPUT_LINE_CHARS + 1) + "\nok\n")]
    assert long_lines(cell) == [("source", 1, CODE_LINE_CHARS + 1),
                                ("output", 0, OUTPUT_LINE_CHARS + 1)]
    assert long_lines(code("x" * CODE_LINE_CHARS)) == []
    assert long_lines(md("x" * 300)) == []
    skipped = code("x" * 300)
    skipped.metadata["slideshow"] = {"slide_type": "skip"}
    assert check(_notebook(md("# T"), skipped)) == [], "a skipped cell is not shown"


def test_cell_height_grows_with_text_code_and_pictures():
    assert cell_height(md("one line")) < cell_height(md("one line\n\nand another"))
    assert cell_height(md("x" * 50)) < cell_height(md("x" * 250))  # wrapped
    short, printed = code("print(1)"), code("print(1)")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n" * 10)]
    assert cell_height(short) < cell_height(printed)


def test_rise_shows_the_decks_canvas():
    assert (RISE_SETTINGS["width"], RISE_SETTINGS["height"]) == (SLIDE_WIDTH, SLIDE_HEIGHT)


def test_the_check_command_lists_violations_per_notebook(tmp_path, capsys):
    bad = _notebook(md("# T"), md("Text\n\n## Hidden heading"), code("x" * 120))
    good = _notebook(md("# T"), code("x = 1"))
    assign(good)
    nbformat.write(bad, tmp_path / "bad.ipynb")
    nbformat.write(good, tmp_path / "good.ipynb")
    assert _main(["check", str(tmp_path / "good.ipynb")]) == 0
    assert _main(["check", str(tmp_path / "bad.ipynb"), str(tmp_path / "good.ipynb")]) == 1
    out = capsys.readouterr().out
    assert "bad.ipynb: 2 violation(s)" in out and "good.ipynb: no violation(s)" in out
    assert "cell 1: mid-cell heading" in out and "cell 2: long line" in out


def test_the_split_and_assign_commands_rewrite_notebooks(tmp_path):
    path = tmp_path / "nb.ipynb"
    nbformat.write(_notebook(md("# T"), md("Text\n\n## Part"), code("x = 1")), path)
    assert _main(["split", str(path)]) == 0
    assert _main(["assign", str(path)]) == 0
    notebook = nbformat.read(path, as_version=4)
    assert types(notebook) == ["slide", "-", "slide", "-"]
    assert check(notebook) == []


def test_an_exported_deck_leaves_out_live_widgets_and_keeps_their_pictures():
    notebook = read(NOTEBOOKS[0])
    widget_cells = [index for index, cell in enumerate(notebook.cells)
                    if cell.cell_type == "code" and any(
                        WIDGET_VIEW in output.get("data", {}) for output in cell.outputs)]
    assert widget_cells, "notebook 01 shows its explorer live"
    before = [slide_type(cell) for cell in notebook.cells]
    exported = without_live_widgets(notebook)
    assert [slide_type(cell) for cell in notebook.cells] == before, "the notebook changed"
    for index, cell in enumerate(exported.cells):
        expected = "skip" if index in widget_cells else before[index]
        assert slide_type(cell) == expected, index
    picture = exported.cells[widget_cells[0] - 1]
    assert ".picture()" in picture.source and slide_type(picture) != "skip"
