"""Notebook hygiene: what strict nbval does not check by itself.

nbval re-runs every notebook and compares its outputs (see the Makefile's test target);
these tests check that the saved notebooks are fit to be compared and read.
"""

import base64
import io
import json
import re
from pathlib import Path

import nbformat
import pytest
from PIL import Image

from tools.course import notebook_paths

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [ROOT / path for path in notebook_paths()]
IGNORE_TAGS = {"nbval-ignore-output", "nbval-skip"}
MACHINE_PATH = re.compile(r"(/root/|/tmp/|/home/\w+|/Users/\w+|/work/|site-packages|C:\\\\)")
RANDOM_CALL = re.compile(r"torch\.(randn|rand|randint|randperm|normal)\(|\.normal_\(|\.uniform_\(")


def code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def ignored(cell):
    return bool(set(cell.metadata.get("tags", [])) & IGNORE_TAGS)


@pytest.fixture(params=NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def notebook(request):
    return nbformat.read(request.param, as_version=4)


def test_valid_nbformat(notebook):
    nbformat.validate(notebook)


def test_saved_from_one_clean_run(notebook):
    counts = [cell.execution_count for cell in code_cells(notebook) if cell.source.strip()]
    assert counts == list(range(1, len(counts) + 1)), (
        "execution counts must be 1, 2, 3, ...: re-run with `make notebooks`")


def test_each_print_is_saved_as_one_output(notebook):
    """A print flushed in pieces is saved as several outputs unless merged (as
    `make notebooks` does); nbval merges them before comparing, a reader's diff does not."""
    for cell in code_cells(notebook):
        for first, second in zip(cell.outputs, cell.outputs[1:], strict=False):
            assert not (first.output_type == second.output_type == "stream"
                        and first.name == second.name), (
                f"one print saved as two outputs in cell:\n{cell.source}\n"
                "re-run with `make notebooks`")


def test_no_errors_and_no_stderr(notebook):
    for cell in code_cells(notebook):
        for output in cell.outputs:
            assert output.output_type != "error", f"error output in cell:\n{cell.source}"
            assert output.get("name") != "stderr", f"stderr output in cell:\n{cell.source}"


def test_no_machine_paths(notebook):
    for cell in notebook.cells:
        text = cell.source + json.dumps(cell.get("outputs", []))
        hit = MACHINE_PATH.search(text)
        assert hit is None, f"machine path {hit and hit.group(0)!r} in cell:\n{cell.source}"


def test_every_picture_says_what_it_shows(notebook):
    """Every stored picture carries alt text (``course_setup.describe_figures``, an
    explorer's ``picture()``): the exported slides and any page made from the notebook
    give it to a screen reader."""
    for cell in code_cells(notebook):
        for output in cell.outputs:
            if "image/png" in output.get("data", {}):
                alt = output.get("metadata", {}).get("image/png", {}).get("alt", "")
                assert alt.strip(), f"a picture without alt text in cell:\n{cell.source}"


def test_every_picture_is_opaque(notebook):
    """Every stored picture paints its own background: no pixel is see-through, so its
    dark text and lines read on a dark page too (JupyterLab's dark theme, a dark site or
    deck). The browser suite looks at the pictures on the dark theme."""
    for cell in code_cells(notebook):
        for output in cell.outputs:
            if "image/png" in output.get("data", {}):
                picture = Image.open(io.BytesIO(base64.b64decode(output["data"]["image/png"])))
                bands = picture.getbands()
                alpha = picture.getchannel("A").getextrema()[0] if "A" in bands else 255
                assert alpha == 255, f"a see-through picture (alpha {alpha}):\n{cell.source}"


def test_widget_state_in_the_form_github_accepts(notebook):
    widgets = notebook.metadata.get("widgets")
    if widgets is not None:
        assert "state" in widgets["application/vnd.jupyter.widget-state+json"]


def test_imports_helpers_explicitly_and_only_the_setup_cell_finds_them(notebook):
    """The setup cell (the first) puts the course's folder on the import path; no lesson
    cell touches it, so a lesson reads the same wherever it runs."""
    setup, *lessons = code_cells(notebook)
    assert "colab-setup" in setup.metadata["tags"] and "course_setup.ready()" in setup.source
    assert "from helpers" in lessons[0].source
    for cell in lessons:
        assert "sys.path" not in cell.source
        assert not re.search(r"import \*", cell.source)


def test_every_cell_that_draws_random_numbers_seeds_itself(notebook):
    for cell in code_cells(notebook):
        if RANDOM_CALL.search(cell.source):
            assert "manual_seed" in cell.source or "Generator" in cell.source, (
                f"this cell draws random numbers without its own seed:\n{cell.source}")


ASSERTS = re.compile(r"^\s*(assert\b|torch\.testing\.assert_close\()", flags=re.M)


def test_only_unstable_cells_are_ignored(notebook):
    """A cell left out of nbval's comparison shows a widget or a timing, or prints numbers
    that depend on the CPU's kernels and asserts the range that holds on any CPU
    (CONTRIBUTING.md, "Outputs any CPU prints"), so that it still tests something."""
    for cell in code_cells(notebook):
        if ignored(cell):
            kinds = {key for output in cell.outputs for key in output.get("data", {})}
            unstable = "application/vnd.jupyter.widget-view+json" in kinds or re.search(
                r"perf_counter|timeit|benchmark\.Timer|__version__", cell.source)
            assert unstable or ASSERTS.search(cell.source), (
                f"ignored cell shows neither a widget nor a timing, and asserts nothing:\n"
                f"{cell.source}")


def test_at_least_90_percent_of_output_cells_are_checked():
    """Checked: compared by nbval, or left out of the comparison but asserting a range."""
    with_outputs = checked = 0
    for path in NOTEBOOKS:
        for cell in code_cells(nbformat.read(path, as_version=4)):
            if cell.outputs:
                with_outputs += 1
                checked += not ignored(cell) or bool(ASSERTS.search(cell.source))
    assert with_outputs and checked / with_outputs >= 0.9, f"{checked} of {with_outputs}"
