"""How many learners one JupyterHub node serves: N learners working at once on this machine.

For each N in --learners (default 1, 2, 4, 8, 16), N kernels start together, as N learners'
servers start them on a hub. All N run one notebook top to bottom at the same moment (the
lecturer says "Run All"), then all move that notebook's explorer at once (--moves steps
each, round-robin over its controls, through ``step`` of tools/explorer_step.py).
Printed for each N:

- run: the notebook's wall time from the first cell to the last, median and slowest
  learner; cpu: the CPU seconds one run costs a kernel (median);
- move: control change to new picture inside the kernel (compute, draw, PNG), p50 and p95
  over every learner's moves. Between moves a learner looks at the picture for --pause s
  (0.5 to 1.5 times, at random); --pause 0 is every learner dragging a slider at once.
  In a browser the widget round trip adds its own time (benchmarks/browser_latency.py
  measures a floor of about 30 ms for it);
- memory: each kernel's peak PSS (proportional set size: shared libraries split between
  the processes that share them), sampled every 0.2 s; the mean over the N kernels.

Also measured once: an idle Jupyter server with JupyterLab (what each learner's
single-user server holds besides its kernel). The sizing at the end combines these: a
learner costs a server plus a kernel in memory; cores are the N at which moves stay
responsive (median and p95 within their targets) per core of this machine, extrapolated
linearly.

    .venv/bin/python benchmarks/hub_sizing.py [--notebook 02_causal_masking]
        [--learners 1,2,4,8,16] [--pause 1]

Prints and asserts nothing; numbers depend on the machine and on what else it does (the
load average before and after is printed).
"""

import argparse
import json
import os
import platform
import re
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from importlib import metadata
from pathlib import Path

import nbformat
import psutil
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the course's tools, however this script is started
from tools.kernel_cells import run_code  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
SAMPLE_EVERY = 0.2  # s, memory sampling
CELL_TIMEOUT = 600  # s
SYSTEM_RESERVE_GB = 1.0  # left to the node's system and the hub itself in the sizing

MOVES_CODE = """\
import json as _json, random as _random, time as _time
from tools.explorer_step import step as _step
from tools.course import explorers as _explorers
_explorer = _explorers()[{name!r}]()
_controls = list(_explorer.controls)
_looks = _random.Random({learner})  # each learner looks at a picture for its own while
_times = []
for _move in range({moves}):
    _started = _time.perf_counter()
    _step(_explorer, _controls[_move % len(_controls)])
    _times.append((_time.perf_counter() - _started) * 1000)
    _time.sleep({pause} * _looks.uniform(0.5, 1.5))
print(_json.dumps(_times))
"""


def notebook_explorer(notebook: Path) -> str:
    """The first explorer the notebook builds (its factory's name)."""
    for cell in nbformat.read(notebook, as_version=4).cells:
        found = re.search(r"\b(\w+_explorer)\(", cell.source)
        if cell.cell_type == "code" and found:
            return found.group(1)
    raise SystemExit(f"{notebook.name} builds no explorer: choose another --notebook")


class Learner(threading.Thread):
    """One learner's kernel: runs the notebook, then moves the explorer, when told."""

    def __init__(self, number: int, notebook: Path, explorer: str, moves: int, pause: float,
                 start: threading.Barrier):
        super().__init__(daemon=True)
        self.cells = [cell.source for cell in nbformat.read(notebook, as_version=4).cells
                      if cell.cell_type == "code"]
        self.number, self.explorer, self.moves, self.pause = number, explorer, moves, pause
        self.start_together = start
        self.manager = KernelManager(kernel_name="python3")
        # stderr: ipykernel's warning about TCP on 127.0.0.1; errors in cells come back as
        # messages and stop the run
        self.manager.start_kernel(cwd=str(NOTEBOOKS), stderr=subprocess.DEVNULL)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=CELL_TIMEOUT)
        self.process = psutil.Process(int(run_code(self.client, "import os; print(os.getpid())")))
        self.run_seconds = self.cpu_seconds = None
        self.move_ms, self.error = [], None

    def run(self):
        try:
            self.start_together.wait()
            cpu_before = sum(self.process.cpu_times()[:2])
            started = time.perf_counter()
            for source in self.cells:
                run_code(self.client, source)
            self.run_seconds = time.perf_counter() - started
            self.cpu_seconds = sum(self.process.cpu_times()[:2]) - cpu_before
            self.start_together.wait()
            printed = run_code(self.client, MOVES_CODE.format(
                name=self.explorer, moves=self.moves, pause=self.pause, learner=self.number))
            self.move_ms = json.loads(printed.strip().splitlines()[-1])
        except Exception as error:  # reported in the table, the run goes on
            self.error = error
            self.start_together.abort()

    def stop(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def peak_pss(processes, done: threading.Event) -> dict:
    """Sample each process's PSS every SAMPLE_EVERY s until done; the peaks, in bytes."""
    peaks = {process.pid: 0 for process in processes}
    while not done.is_set():
        for process in processes:
            try:
                peaks[process.pid] = max(peaks[process.pid], process.memory_full_info().pss)
            except psutil.NoSuchProcess:
                pass
        done.wait(SAMPLE_EVERY)
    return peaks


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def measure(notebook: Path, explorer: str, learners: int, moves: int, pause: float) -> dict:
    start = threading.Barrier(learners)
    group = [Learner(number, notebook, explorer, moves, pause, start)
             for number in range(learners)]
    done, peaks = threading.Event(), {}
    sampler = threading.Thread(
        target=lambda: peaks.update(peak_pss([learner.process for learner in group], done)),
        daemon=True)
    sampler.start()
    try:
        for learner in group:
            learner.start()
        for learner in group:
            learner.join()
    finally:
        done.set()
        sampler.join()
        for learner in group:
            learner.stop()
    errors = [learner.error for learner in group if learner.error is not None]
    if errors:
        return {"error": repr(errors[0])}
    runs = [learner.run_seconds for learner in group]
    moves_ms = [time for learner in group for time in learner.move_ms]
    return {"run_median": statistics.median(runs), "run_max": max(runs),
            "cpu": statistics.median(learner.cpu_seconds for learner in group),
            "move_p50": percentile(moves_ms, 0.5), "move_p95": percentile(moves_ms, 0.95),
            "memory": statistics.mean(peaks.values()) / 2**20}


def idle_server_memory() -> float:
    """PSS in MB of a Jupyter server with JupyterLab, started and left idle for 5 s."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = secrets.token_hex(16)
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={NOTEBOOKS}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}",
                                       timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the Jupyter server did not start") from None
                time.sleep(0.5)
        time.sleep(5)
        return psutil.Process(server.pid).memory_full_info().pss / 2**20
    finally:
        server.terminate()
        server.wait(timeout=30)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", default="02_causal_masking",
                        help="the notebook every learner runs (name without .ipynb)")
    parser.add_argument("--learners", default="1,2,4,8,16", help="the values of N")
    parser.add_argument("--moves", type=int, default=40, help="explorer steps per learner")
    parser.add_argument("--pause", type=float, default=1.0,
                        help="s a learner looks at a picture before the next move (each "
                             "look 0.5 to 1.5 times this); 0: every learner drags at once")
    parser.add_argument("--p50-target", type=float, default=100,
                        help="ms: moves feel immediate while their median is at most this")
    parser.add_argument("--p95-target", type=float, default=300,
                        help="ms: and while their 95th percentile is at most this")
    args = parser.parse_args(argv)
    notebook = NOTEBOOKS / f"{args.notebook}.ipynb"
    if not notebook.exists():
        parser.error(f"--notebook: no notebook {notebook.name} in notebooks/")
    counts = [int(count) for count in args.learners.split(",")]
    explorer = notebook_explorer(notebook)
    cores = psutil.cpu_count(logical=True)
    memory_gb = psutil.virtual_memory().total / 2**30
    versions = ", ".join(f"{name} {metadata.version(name)}"
                         for name in ("torch", "matplotlib", "ipykernel", "jupyterlab"))
    print(f"Python {platform.python_version()}, {versions}")
    print(f"machine: {cores} cores, {memory_gb:.0f} GiB; load average before "
          f"{os.getloadavg()[0]:.2f}")
    print(f"notebook {notebook.name}, then {args.moves} moves of {explorer} per learner, "
          f"{args.pause:g} s between moves (0.5 to 1.5 times); all learners at once\n")
    server = idle_server_memory()
    header = (f"{'learners':>8} {'run s (median / slowest)':>25} {'cpu s':>6} "
              f"{'move ms (p50 / p95)':>20} {'kernel MB':>10}")
    print(header)
    print("-" * len(header))
    results = {}
    for count in counts:
        result = measure(notebook, explorer, count, args.moves, args.pause)
        results[count] = result
        if "error" in result:
            print(f"{count:>8} error: {result['error']}")
            continue
        print(f"{count:>8} {result['run_median']:>13.1f} / {result['run_max']:<9.1f} "
              f"{result['cpu']:>6.1f} {result['move_p50']:>10.0f} / {result['move_p95']:<7.0f} "
              f"{result['memory']:>10.0f}", flush=True)
    print(f"\nidle Jupyter server with JupyterLab: {server:.0f} MB PSS; load average after "
          f"{os.getloadavg()[0]:.2f}")
    measured = {count: result for count, result in results.items() if "error" not in result}
    if not measured:
        return 1
    per_learner = server + max(result["memory"] for result in measured.values())
    responsive = [count for count, result in measured.items()
                  if result["move_p50"] <= args.p50_target
                  and result["move_p95"] <= args.p95_target]
    target = f"p50 within {args.p50_target:.0f} ms and p95 within {args.p95_target:.0f} ms"
    print(f"\nSizing (a linear extrapolation from this {cores}-core machine):")
    print(f"- memory: a learner holds one server and one kernel, about {per_learner:.0f} MB "
          f"(the largest kernel mean above); keep {SYSTEM_RESERVE_GB:.0f} GB for the system "
          "and more when a learner opens several notebooks (one kernel each)")
    if responsive:
        per_core = max(responsive) / cores
        print(f"- cores: up to {max(responsive)} learners moving explorers at once kept the "
              f"moves' {target} here: about {per_core:.1f} per core"
              + (" (the largest N tried: more may fit)" if max(responsive) == max(measured)
                 else ""))
    else:
        per_core = None
        print(f"- cores: no N kept the moves' {target} here")
    run_all = statistics.median(result["cpu"] for result in measured.values())
    print(f"- a class pressing Run All together: about {run_all:.1f} CPU s per learner, "
          f"so K learners on C cores wait about K x {run_all:.1f} / C s")
    for node_cores, node_gb in ((4, 16), (8, 32), (16, 64)) if per_core else ():
        by_memory = int((node_gb - SYSTEM_RESERVE_GB) * 1024 / per_learner)
        by_cores = int(node_cores * per_core) if per_core else 0
        print(f"  a node with {node_cores} cores and {node_gb} GB serves about "
              f"{min(by_memory, by_cores)} learners (memory allows {by_memory}, cores "
              f"{by_cores}); their Run All together takes about "
              f"{min(by_memory, by_cores) * run_all / node_cores:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
