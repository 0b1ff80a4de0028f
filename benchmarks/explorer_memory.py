"""How much memory a kernel keeps when an explorer's cell is run again and again.

    .venv/bin/python benchmarks/explorer_memory.py [--builds 10] [--moves 3]
        [--explorers name,...] [--baseline main]

For each explorer the course's manifest (course.toml) names, a fresh kernel (started by
jupyter_client, as JupyterLab starts one) runs the explorer's two cells as a notebook has
them: ``explorer = <factory>()`` with ``explorer.picture()``, then ``explorer`` (shown,
so that IPython's output history keeps it, as it keeps every cell's result), then
``--moves`` steps of its controls (``step``, tools/explorer_step.py). Once to warm up
(imports, caches), then ``--builds`` times more. After the warm-up and after the last
build, this script runs a full garbage collection in the kernel (``gc.collect()``) and
reads the kernel's resident memory (RSS). Printed: how much it grew over the builds, in
MB, and in brackets how much of that stays once the C library has given its free memory
back to the system (glibc's ``malloc_trim(0)``, after the last build only; "-" without
glibc): what is still allocated. The rest is memory freed late (a figure is garbage in
reference cycles, freed by Python's collector of old objects, which may wait for many
builds) that the C library keeps for what is allocated next.

Beside it, in the same run and the same way, the helpers of ``--baseline`` (a git ref,
``main`` by default; ``--baseline ''`` for none): ``git archive`` copies its ``helpers/``
into a temporary folder, put first on that kernel's PYTHONPATH. The two kernels take
turns, explorer by explorer. Target: less than 30 MB over 10 builds. Asserts nothing.
"""

import argparse
import io
import os
import platform
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import psutil
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the course's tools, however this script is started
from tools.course import explorers  # noqa: E402
from tools.kernel_cells import run_code  # noqa: E402

TARGET_MB = 30  # over 10 builds
TIMEOUT = 600  # s, for any one cell
# The kernel finds the course's tools at the end of its path, so that a baseline's
# ``helpers``, first on PYTHONPATH, comes before the course's own (printed, to be sure).
SETUP = """\
import gc, sys
sys.path.append({root!r})
import helpers
from tools.course import explorers
from tools.explorer_step import step
factory = explorers()[{name!r}]
print(helpers.__file__)
"""
BUILD = "explorer = factory()\nexplorer.picture()"
SHOW = "explorer"
TRIM = """\
import ctypes
try:
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    print("trimmed")
except (OSError, AttributeError):  # not glibc
    pass
"""
MOVES = """\
for move in range({moves}):
    step(explorer, list(explorer.controls)[move % len(explorer.controls)])
    assert explorer.last_error is None, explorer.last_error
"""


def growth(name: str, builds: int, moves: int, pythonpath: str = None) -> tuple:
    """(MB the kernel grew over the builds, MB once trimmed or None, where its helpers came
    from), in a new kernel with ``pythonpath`` first on its path."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    manager = KernelManager(kernel_name="python3")
    with tempfile.TemporaryDirectory() as folder:  # no course folder as the working one
        # stderr: ipykernel's warning about TCP on 127.0.0.1; errors come back as messages
        manager.start_kernel(cwd=folder, env=env, stderr=subprocess.DEVNULL)
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=TIMEOUT)
            source = run_code(client, SETUP.format(root=str(ROOT), name=name)).strip()
            kernel = psutil.Process(int(run_code(client, "import os; print(os.getpid())")))
            sizes = []
            for build in range(builds + 1):  # the first to warm up
                for code in (BUILD, SHOW, MOVES.format(moves=moves)):
                    run_code(client, code)
                if build in (0, builds):
                    run_code(client, "gc.collect()")
                    sizes.append(kernel.memory_info().rss)
            trimmed = None
            if run_code(client, TRIM).strip() == "trimmed":
                trimmed = (kernel.memory_info().rss - sizes[0]) / 1e6
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    return (sizes[-1] - sizes[0]) / 1e6, trimmed, source


def baseline_helpers(ref: str, folder: str) -> str:
    """The folder holding ``ref``'s helpers/ (for PYTHONPATH), or raises why not."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=zip", ref, "helpers"],
                             capture_output=True, check=True).stdout
    with zipfile.ZipFile(io.BytesIO(archive)) as files:
        files.extractall(folder)
    return folder


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=10, help="builds after the warm-up")
    parser.add_argument("--moves", type=int, default=3, help="control steps after each build")
    parser.add_argument("--explorers", help="comma-separated names (default: all)")
    parser.add_argument("--baseline", default="main",
                        help="a git ref whose helpers are measured beside ('' for none)")
    args = parser.parse_args()
    if args.builds < 1 or args.moves < 0:
        parser.error("--builds must be at least 1, --moves at least 0")
    names = list(explorers())
    if args.explorers:
        unknown = sorted(set(args.explorers.split(",")) - set(names))
        if unknown:
            parser.error(f"unknown {', '.join(unknown)}; known: {', '.join(names)}")
        names = args.explorers.split(",")

    print(f"Python {platform.python_version()}, {args.builds} builds after a warm-up, "
          f"{args.moves} moves after each; MB of resident memory the kernel kept, after "
          f"gc.collect(); target: under {TARGET_MB * args.builds / 10:.0f} MB")
    with tempfile.TemporaryDirectory() as folder:
        baseline, why_not = None, ""
        if args.baseline:
            try:
                baseline = baseline_helpers(args.baseline, folder)
            except (OSError, subprocess.CalledProcessError) as error:
                why_not = getattr(error, "stderr", b"").decode().strip() or str(error)
        columns = ["this copy", f"{args.baseline or 'baseline'}"]
        print(f"\n{'explorer':<28} " + " ".join(f"{c + ', MB (trimmed)':>22}" for c in columns))
        sources = set()
        for name in names:
            cells = []
            for pythonpath in ([None, baseline] if baseline else [None]):
                try:
                    grown, trimmed, source = growth(name, args.builds, args.moves, pythonpath)
                except Exception as error:  # reported, the run goes on
                    cells.append(f"error: {type(error).__name__}: {error}"[:22])
                    continue
                sources.add(source)
                cells.append(f"{grown:.1f} ({'-' if trimmed is None else f'{trimmed:.1f}'})")
            if not baseline:
                cells.append("n/a")
            print(f"{name:<28} " + " ".join(f"{cell:>22}" for cell in cells), flush=True)
        print("\nhelpers imported from: " + "; ".join(sorted(sources)))
        if why_not:
            print(f"baseline {args.baseline!r}: n/a, {why_not}")


if __name__ == "__main__":
    main()
