"""The course as one zip for learners (``make zip``), for handing it out while it has no
public address (a learning platform, a mail):

    python -m tools.course_zip [--output-dir build] [--name causal-attention-course]

writes ``build/causal-attention-course.zip`` and prints its size. It holds what a learner
needs, inside one folder (unzipping it gives ``causal-attention-course/``): the notebooks
as committed, with their outputs, ``helpers/``, ``solutions/``, ``course_setup.py``, the
README and LICENSE, and what the README's local install uses (``make lab`` or pip:
Makefile, pyproject.toml, constraints.txt, install_torch.py). Only files git tracks go in;
no tests, tools, benchmarks, CI or hidden files. On Colab, a notebook's setup cell asks for
this zip and unzips it (``colab_setup_source`` in tools/links.py).
"""

import argparse
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COURSE_FOLDER = "causal-attention-course"  # the zip's one top folder, and its file's name
# What a learner needs: these folders' tracked files, and these files at the top.
FOLDERS = ("notebooks", "helpers", "solutions")
FILES = ("course_setup.py", "README.md", "LICENSE", "Makefile", "pyproject.toml",
         "constraints.txt", "install_torch.py")


def learner_files(root: Path = ROOT) -> list:
    """The paths (relative, as git names them) of the tracked files a learner needs."""
    tracked = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True,
                             capture_output=True, text=True).stdout.split("\0")
    return sorted(path for path in tracked if path and wanted(path))


def wanted(path: str) -> bool:
    """Whether a tracked file goes into the zip."""
    parts = path.split("/")
    if any(part.startswith(".") or part == "__pycache__" for part in parts):
        return False
    return parts[0] in FOLDERS if len(parts) > 1 else path in FILES


def uncommitted(paths: list, root: Path = ROOT) -> list:
    """Those of ``paths`` that differ from the last commit (changed, staged or deleted)."""
    if not paths:
        return []
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "-z", "--",
                             *paths], check=True, capture_output=True, text=True).stdout
    return sorted(entry[3:] for entry in status.split("\0") if entry[3:])


def build_zip(output_dir: Path, name: str = COURSE_FOLDER, root: Path = ROOT) -> Path:
    """Write ``output_dir/<name>.zip``, the learner's files inside the folder ``<name>/``;
    returns its path."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / f"{name}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path in learner_files(root):
            if (root / path).is_file():  # a tracked file deleted here is left out
                archive.write(root / path, f"{name}/{path}")
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.course_zip", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", default=str(ROOT / "build"), type=Path,
                        help="where to write the zip (default: build/)")
    parser.add_argument("--name", default=COURSE_FOLDER,
                        help=f"the zip's name and its top folder's (default: {COURSE_FOLDER})")
    args = parser.parse_args(argv)
    changed = uncommitted(learner_files())
    if changed:
        print(f"Note: {len(changed)} of these files differ from the last commit, and go in "
              f"as they are here: {', '.join(changed)}", file=sys.stderr)
    target = build_zip(args.output_dir, args.name)
    with zipfile.ZipFile(target) as archive:
        count = len(archive.namelist())
    print(f"Wrote {os.path.relpath(target)}: {target.stat().st_size / 1e6:.1f} MB, "
          f"{count} files in {args.name}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
