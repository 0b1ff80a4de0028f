"""The lecture copy (`make lecture`): outputs cleared, speaker notes and layout kept, and
the course's files beside it so that it runs on its own."""

import re

import nbformat

from tools.course import ROOT, notebook_paths
from tools.lecture import lecture_copy, write
from tools.slides import slide_type


def test_the_lecture_copy_clears_outputs_and_keeps_notes_and_layout(tmp_path):
    sources = [ROOT / path for path in notebook_paths()]
    written = write(tmp_path, sources)
    assert [path.name for path in written] == [path.name for path in sources]
    for source, target in zip(sources, written, strict=True):
        original = nbformat.read(source, as_version=4)
        copy = nbformat.read(target, as_version=4)
        nbformat.validate(copy)
        assert any(cell.get("outputs") for cell in original.cells), "nothing was cleared"
        assert all(not cell.outputs and cell.execution_count is None
                   for cell in copy.cells if cell.cell_type == "code")
        assert "widgets" not in copy.metadata
        assert copy.metadata.get("rise") == original.metadata.get("rise")
        assert [(cell.source, slide_type(cell), cell.metadata.get("tags"))
                for cell in copy.cells] == [
            (cell.source, slide_type(cell), cell.metadata.get("tags"))
            for cell in original.cells]
        assert any(slide_type(cell) == "notes" for cell in copy.cells)
    for name in ("course_setup.py", "helpers/__init__.py", "solutions"):
        assert (tmp_path / name).exists(), f"the notebooks' setup cell looks for {name}"
    assert (tmp_path / "notebooks" / "rise.css").read_text() == \
        (ROOT / "notebooks" / "rise.css").read_text(), "RISE reads its sizes beside them"
    assert not list(tmp_path.rglob("__pycache__"))


def test_the_lecture_copy_leaves_the_notebook_it_reads_alone():
    notebook = nbformat.read(ROOT / notebook_paths()[0], as_version=4)
    outputs = [cell.get("outputs") for cell in notebook.cells]
    lecture_copy(notebook)
    assert [cell.get("outputs") for cell in notebook.cells] == outputs


def test_make_lecture_writes_it():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^lecture:.*\n\t.*-m tools\.lecture --output-dir build/lecture",
                     makefile, re.MULTILINE)
