"""The lecture copy: the notebooks with their outputs cleared, to present from.

The committed notebooks are executed (nbval compares their outputs), so in RISE every
result is on screen before the speaker notes' "ask the class first". The lecture copy has
no outputs and no saved widget state: each result appears when its cell runs in front of
the class. Slide types, speaker notes (notes cells), tags and the RISE settings are kept.
The course's ``course_setup.py``, ``helpers/`` and ``solutions/`` are copied next to the
notebooks' folder, where their setup cell looks for them, so the folder runs on its own;
``rise.css`` (RISE's text sizes for a projector) goes into the notebooks' folder, where
RISE reads it:

    python -m tools.lecture --output-dir build/lecture      # what `make lecture` runs
    jupyter lab --notebook-dir=build/lecture/notebooks
"""

import argparse
import shutil
from pathlib import Path

import nbformat

from tools import course

ROOT = Path(__file__).resolve().parents[1]
COURSE_FILES = ("course_setup.py", "helpers", "solutions")  # what the notebooks import
RISE_CSS = "notebooks/rise.css"  # RISE's text sizes for a projector, read beside them


def lecture_copy(notebook):
    """The notebook without outputs, execution counts or widget state (a new object)."""
    copy = nbformat.from_dict(notebook)
    for cell in copy.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    copy.metadata.pop("widgets", None)
    return copy


def write(output_dir: Path, notebook_paths=None) -> list:
    """Write the lecture copies to ``output_dir/notebooks`` and the course's files beside
    them; returns the notebooks written."""
    output_dir = Path(output_dir)
    if notebook_paths is None:
        notebook_paths = [ROOT / path for path in course.notebook_paths()]
    for name in (*COURSE_FILES, RISE_CSS):
        source, target = ROOT / name, output_dir / name
        if source.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    written = []
    for path in notebook_paths:
        target = output_dir / "notebooks" / Path(path).name
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(lecture_copy(nbformat.read(path, as_version=4)), target)
        written.append(target)
    return written


def _main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.lecture", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--output-dir", type=Path, default=Path("build/lecture"))
    args = parser.parse_args(argv)
    for target in write(args.output_dir, args.notebooks or None):
        print(target)


if __name__ == "__main__":
    _main()
