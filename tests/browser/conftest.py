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
    if not LATENCIES:
        return
    terminalreporter.section("explorer latency in the browser (control change -> new image)")
    for name, times in LATENCIES.items():
        ordered = sorted(times)
        terminalreporter.write_line(
            f"{name}: median {ordered[len(ordered) // 2]:.0f} ms, worst {ordered[-1]:.0f} ms "
            f"over {len(times)} moves (target: median <= 150 ms)")


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
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"JupyterLab exited:\n{(home / 'server.log').read_text()}")
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not answer within 120 s") from None
                time.sleep(0.5)
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
