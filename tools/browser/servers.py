"""Starting and stopping what the browser tests drive: a throwaway JupyterLab server and a
headless Chromium. Used by the browser tests' fixtures (tests/browser/conftest.py) and by
benchmarks/browser_latency.py. Every process started here is stopped by its id, whatever
happens."""

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
from contextlib import contextmanager
from pathlib import Path

import nbformat
import psutil

ROOT = Path(__file__).resolve().parents[2]  # the course
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def find_chromium():
    """The Chromium to drive: $CHROMIUM, /usr/bin/chromium, or chromium or
    chromium-browser on PATH; None when there is none."""
    candidates = [os.environ.get("CHROMIUM"), "/usr/bin/chromium",
                  shutil.which("chromium"), shutil.which("chromium-browser")]
    return next((path for path in candidates if path and os.access(path, os.X_OK)), None)


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


# JupyterLab's settings for a page that tests drive: no news or update notifications over
# the page; every cell in the page, not only those scrolled into view.
LAB_SETTINGS = {
    "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "notebook-extension/tracker": {"windowingMode": "none"},
}


def write_lab_settings(settings: Path):
    """LAB_SETTINGS as JupyterLab's user settings in the folder ``settings``."""
    for plugin, values in LAB_SETTINGS.items():
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@contextmanager
def running_jupyter_lab(root: Path, state: Path):
    """JupyterLab on 127.0.0.1, a free port and a random token, serving ``root``, with
    LAB_SETTINGS; its settings, runtime, config, data and workspace folders and its log in
    ``state``. Yields (base URL, token); the server and its kernels are stopped on exit."""
    settings = state / "settings"
    write_lab_settings(settings)
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
           "JUPYTER_CONFIG_DIR": str(state / "config"), "JUPYTER_DATA_DIR": str(state / "data"),
           "PYTHONUNBUFFERED": "1"}
    log = (state / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={settings}",
         f"--LabApp.workspaces_dir={state / 'workspaces'}"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_it_answers(server, f"{base}/api/status?token={token}", "JupyterLab",
                              state / "server.log")
        yield base, token
    finally:
        stop_process_tree(psutil.Process(server.pid))
        log.close()


@contextmanager
def jupyter_lab_server(home: Path, notebooks):
    """``running_jupyter_lab`` serving copies of ``notebooks`` with their outputs cleared
    from ``home``/notebooks (beside them the course's setup module and, linked, its
    helpers and solutions, as in the course's folder); its own folders in ``home``. Yields
    (base URL, token, folder of the notebooks)."""
    served = home / "notebooks"
    served.mkdir()
    for notebook in notebooks:
        clear_outputs(notebook, served / notebook.name)
    shutil.copy(ROOT / "notebooks" / "rise.css", served)  # RISE's sizes for a projector
    # The notebooks' setup cell finds these one folder up, as in the course's folder.
    shutil.copy(ROOT / "course_setup.py", home)
    for folder in ("helpers", "solutions"):
        (home / folder).symlink_to(ROOT / folder, target_is_directory=True)
    with running_jupyter_lab(served, home) as (base, token):
        yield base, token, served


@contextmanager
def headless_chromium():
    """Headless Chromium (``find_chromium``) driven by playwright; stopped on exit (with
    playwright's driver), and anything they left behind is stopped by id."""
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
