"""Lecture mode: every notebook carries slide metadata and exports as slides that fit."""

import re

import nbformat
import pytest

from helpers.links import ROOT, notebook_paths
from helpers.slides import (
    RISE_SETTINGS,
    SCREEN_BUDGET,
    SLIDE_HEIGHT,
    SLIDE_TYPES,
    assign,
    cell_height,
    export,
    heading_level,
    screen_heights,
    screens,
    slide_type,
)

NOTEBOOKS = notebook_paths()


def read(path):
    return nbformat.read(ROOT / path, as_version=4)


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
    assert notebook.metadata["rise"] == RISE_SETTINGS


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_every_notebook_has_speaker_notes(path):
    notes = [cell for cell in read(path).cells if slide_type(cell) == "notes"]
    assert notes, "a lecturer needs at least one speaker note"
    assert all(cell.cell_type == "markdown" for cell in notes)


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_no_screen_is_taller_than_the_slide(path):
    """By the estimate; tests/browser/test_slides_fit.py measures the exported slides.
    Screens of several cells are filled only up to SCREEN_BUDGET, leaving room for the
    estimate's error; a single cell cannot be split by metadata, so it gets the slide."""
    notebook = read(path)
    for screen, height in zip(screens(notebook), screen_heights(notebook), strict=True):
        limit = SLIDE_HEIGHT if len(screen) == 1 else SCREEN_BUDGET
        assert height <= limit, (
            f"cells {screen} are about {height} px tall, more than fits a {SLIDE_HEIGHT} px "
            "slide: split a cell, or run python -m helpers.slides assign on the notebook")


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
    notebook = read(path)
    html = export(ROOT / path, tmp_path).read_text(encoding="utf-8")
    tree = section_tree(html)
    assert len(tree) == sum(1 for cell in notebook.cells if slide_type(cell) == "slide") >= 5
    assert sum(tree) == len(screens(notebook))
    assert html.count('<aside class="notes">') == sum(
        1 for cell in notebook.cells if slide_type(cell) == "notes")
    assert "google.colab" not in html, "the Colab setup cell is skipped in the slides"


def _notebook(*cells):
    return nbformat.v4.new_notebook(cells=list(cells))


def test_assign_starts_slides_at_headings_and_subslides_when_full():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    def long_code():
        return code("\n".join(f"x{i} = {i}" for i in range(20)))  # about 540 px

    notes = md("Ask the class first.")
    notes.metadata["slideshow"] = {"slide_type": "notes"}
    notebook = _notebook(md("# Title"), md("## Part"), long_code(), long_code(), notes,
                         md("### Detail"), md("text"))
    assign(notebook)
    assert [slide_type(cell) for cell in notebook.cells] == [
        "slide", "slide", "-", "subslide", "notes", "subslide", "-"]
    assert notebook.metadata["rise"] == RISE_SETTINGS
    assert all(height <= SCREEN_BUDGET for height in screen_heights(notebook))


def test_cell_height_grows_with_text_code_and_pictures():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    assert cell_height(md("one line")) < cell_height(md("one line\n\nand another"))
    assert cell_height(md("x" * 50)) < cell_height(md("x" * 250))  # wrapped
    short, printed = code("print(1)"), code("print(1)")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n" * 10)]
    assert cell_height(short) < cell_height(printed)
