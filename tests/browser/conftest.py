"""A throwaway JupyterLab server and a headless Chromium, for the browser tests.

The tests run when a Chromium is found (/usr/bin/chromium, chromium or
chromium-browser on PATH, or the CHROMIUM environment variable); otherwise they are
reported as skipped with how to enable them. Every process started here is stopped by
its id when the tests end, whether they passed or not.
"""

import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
HOW_TO_ENABLE = ("no Chromium found: install one (Debian/Ubuntu: `apt-get install chromium`) "
                 "or set CHROMIUM=/path/to/chromium, then run `make test` again")
LATENCIES = {}  # notebook name -> [ms from a control change to the new image]
PICTURE_SIZES = {}  # notebook name or "floor" -> its pictures' sizes in px ("1000 x 420")
# The floor: a bare IntSlider whose change swaps an Image between two ready-made PNGs, in
# a notebook of its own, timed like the explorers before and after the notebooks.
FLOOR_NOTEBOOK = "latency_floor.ipynb"
FLOOR_LATENCIES = {}  # "before" / "after" the notebooks -> [ms]
FLOOR_PICTURES = []  # what the floor notebook printed about its pictures
FLOOR_MARGIN_MS = 30  # target: each notebook's median at most this far above the floor's
FLOOR_CELL = """\
import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from helpers.rendering import png_bytes


def picture(seed):
    \"\"\"A PNG like an explorer's: 1300 x 460 px (explorers' pictures range from 1000 x 350
    to 1550 x 750), three annotated 6 x 6 heatmaps, encoded as explorers encode theirs.\"\"\"
    figure = Figure(figsize=(13, 4.6), dpi=100, layout="constrained")
    canvas = FigureCanvasAgg(figure)
    generator = np.random.default_rng(seed)
    for ax in figure.subplots(1, 3):
        values = generator.random((6, 6))
        ax.imshow(values, vmin=0, vmax=1)
        for (row, column), value in np.ndenumerate(values):
            ax.text(column, row, f"{value:.2f}", ha="center", va="center")
        ax.set_title(f"sample {seed}: largest weight {values.max():.2f}")
    canvas.draw()
    return png_bytes(canvas)


pictures = [picture(0), picture(1)]
print(" and ".join(f"{len(png) / 1000:.0f} KB" for png in pictures))
slider = widgets.IntSlider(value=0, min=0, max=1000, description="floor")
image = widgets.Image(value=pictures[0], format="png")
slider.observe(lambda change: setattr(image, "value", pictures[change["new"] % 2]),
               names="value")
floor = widgets.VBox([widgets.HBox([slider]), image])
floor.add_class("latency-floor")
floor
"""


def find_chromium():
    candidates = [os.environ.get("CHROMIUM"), "/usr/bin/chromium",
                  shutil.which("chromium"), shutil.which("chromium-browser")]
    return next((path for path in candidates if path and os.access(path, os.X_OK)), None)


def pytest_collection_modifyitems(config, items):
    if find_chromium():
        return
    skip = pytest.mark.skip(reason=HOW_TO_ENABLE)
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Tell the page fixture that the test failed, so that it saves a screenshot."""
    outcome = yield
    if call.when == "call" and outcome.get_result().failed:
        item.failed_call = True


def pytest_terminal_summary(terminalreporter):
    if not LATENCIES and not FLOOR_LATENCIES:
        return
    write = terminalreporter.write_line
    terminalreporter.section("explorer latency in the browser (control change -> new image)")
    write("ms from the move's input event to the new picture decoded and painted; targets: "
          f"median <= 150 ms, and at most {FLOOR_MARGIN_MS} ms above the floor's median")
    floor_times = [time for times in FLOOR_LATENCIES.values() for time in times]
    floor = statistics.median(floor_times) if floor_times else None
    if floor is not None:
        write(f"floor: a bare IntSlider swapping an Image between two ready-made PNGs "
              f"({', '.join(FLOOR_PICTURES)}); medians "
              + ", ".join(f"{statistics.median(times):.0f} ms {when} the notebooks"
                          for when, times in FLOOR_LATENCIES.items()))
    rows = ([("floor", floor_times)] if floor_times else []) + list(LATENCIES.items())
    width = max(len(name) for name, _times in rows)
    write(f"{'':<{width}} {'median':>6} {'worst':>6} {'moves':>5}  {'above the floor':<18} "
          "pictures (px)")
    for name, times in rows:
        median = statistics.median(times)
        above = "-"
        if floor is not None and name != "floor":
            met = "met" if median - floor <= FLOOR_MARGIN_MS else "MISSED"
            above = f"{median - floor:+.0f} ms ({met})"
        picture = PICTURE_SIZES.get(name, "")
        write(f"{name:<{width}} {median:>6.0f} {max(times):>6.0f} {len(times):>5}  {above:<18} "
              f"{picture}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process_tree(process: psutil.Process, timeout: float = 10):
    """Terminate a process and everything it started (kernels run in their own
    sessions, so their process groups are stopped one by one), by id."""
    try:
        family = [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for member in family:
        try:
            os.killpg(member.pid, signal.SIGTERM) if member.pid == os.getpgid(member.pid) \
                else member.terminate()
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            pass
    _, alive = psutil.wait_procs(family, timeout=timeout)
    for member in alive:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=timeout)


def wait_until_it_answers(process, url: str, name: str, log: Path, timeout: float = 120):
    """Wait until ``url`` answers; raise with the log if ``process`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited:\n{log.read_text()}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not answer within {timeout:.0f} s") from None
            time.sleep(0.5)


def clear_outputs(source: Path, target: Path):
    notebook = nbformat.read(source, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, target)


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1, a free port and a random token, serving copies of the
    notebooks with their outputs cleared; settings, runtime and workspace folders are
    temporary. Yields (base URL, token, folder of the notebooks)."""
    home = tmp_path_factory.mktemp("lab")
    served = home / "notebooks"
    served.mkdir()
    for notebook in NOTEBOOKS:
        clear_outputs(notebook, served / notebook.name)
    shutil.copy(ROOT / "notebooks" / "rise.css", served)  # RISE's sizes for a projector
    # The notebooks' setup cell finds these one folder up, as in the course's folder.
    shutil.copy(ROOT / "course_setup.py", home)
    for folder in ("helpers", "solutions"):
        (home / folder).symlink_to(ROOT / folder, target_is_directory=True)
    floor = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_CELL)])
    floor.metadata.kernelspec = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nbformat.write(floor, served / FLOOR_NOTEBOOK)
    settings = home / "settings"
    for plugin, values in [
        # No news or update notifications over the page.
        ("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
        # Every cell in the page, not only those scrolled into view.
        ("notebook-extension/tracker", {"windowingMode": "none"}),
    ]:
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
           "PYTHONUNBUFFERED": "1"}
    log = (home / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={served}", f"--LabApp.user_settings_dir={settings}",
         f"--LabApp.workspaces_dir={home / 'workspaces'}"],
        cwd=served, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_it_answers(server, f"{base}/api/status?token={token}", "JupyterLab",
                              home / "server.log")
        yield base, token, served
    finally:
        stop_process_tree(psutil.Process(server.pid))
        log.close()


@pytest.fixture
def page(browser, jupyter_lab, request):
    """A page of the browser; on a failed test its screenshot goes to test-artifacts/."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    yield page
    failed = getattr(request.node, "failed_call", False)
    if failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / f"{request.node.name}.png", full_page=True)
    page.close()


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium driven by playwright; stopped (with playwright's driver) at the
    end, and anything they left behind is stopped by id."""
    from playwright.sync_api import sync_playwright

    before = {child.pid for child in psutil.Process().children(recursive=True)}
    playwright = sync_playwright().start()
    started = [child for child in psutil.Process().children(recursive=True)
               if child.pid not in before]
    try:
        chromium = playwright.chromium.launch(executable_path=find_chromium(),
                                              args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        started += [child for child in psutil.Process().children(recursive=True)
                    if child.pid not in before and child not in started]
        playwright.stop()
        for process in started:
            stop_process_tree(process, timeout=5)
