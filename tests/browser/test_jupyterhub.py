"""A school's JupyterHub: a learner follows the course's nbgitpuller link and works there.

A real JupyterHub on 127.0.0.1 (from PyPI, its dummy authenticator and its local process
spawner, its proxy from the npm registry) serves learners from this environment, as a hub
built from the course's Binder image would. The course is published as a local bare
repository standing in for GitHub, made from the files git tracks here. A learner logs in,
follows the link the course writes (`tools.links.nbgitpuller_url`), lands in
JupyterLab on a notebook of the clone in their home, runs its setup cell and the cells
that show its explorer (the whole notebook runs in the other browser tests), and moves
the explorer;
then the learner changes a file, a fix is published, and the same link brings the
fix into the learner's clone and keeps their change.

Skipped, saying why, where npm or the hub's packages are missing or the proxy cannot be
installed (no network to the npm registry).
"""

import importlib.util
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import psutil
import pytest

from tools.browser.lab import (
    EXPLORER,
    IMAGE_TIMEOUT,
    PANEL,
    assert_no_error_outputs,
    clear_all_outputs,
    control_moves,
    image_src,
    run_cells,
    wait_for_kernel,
)
from tools.browser.servers import (
    free_port,
    stop_process_tree,
    wait_until_it_answers,
    write_lab_settings,
)
from tools.links import nbgitpuller_url

from .conftest import ARTIFACTS, ROOT

pytestmark = pytest.mark.browser

PROXY = "configurable-http-proxy@5.3.0"  # the hub's proxy, from the npm registry
PROXY_FOLDER = ROOT / "build" / "hub"  # installed once, kept between runs
REPO = "course/causal-attention-course"  # the clone's folder is the last part
LEARNER = "learner"
NOTEBOOK = "notebooks/01_self_attention.ipynb"
START_TIMEOUT = 120  # s, for the hub and for a learner's server
SPAWN_TIMEOUT = 180_000  # ms, from the link to the notebook on screen


def run(command, cwd=None):
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True)


def install_proxy() -> Path:
    """The proxy's command, installed with npm into build/hub the first time."""
    command = PROXY_FOLDER / "node_modules" / ".bin" / "configurable-http-proxy"
    if command.exists():
        return command
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("no npm, which installs the hub's proxy: install Node.js and npm "
                    "(Debian/Ubuntu: `apt-get install nodejs npm`) to run the JupyterHub test")
    PROXY_FOLDER.mkdir(parents=True, exist_ok=True)
    installed = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix",
                                str(PROXY_FOLDER), PROXY], capture_output=True, text=True)
    if installed.returncode != 0 or not command.exists():
        pytest.skip(f"npm could not install {PROXY} (is the npm registry reachable?): "
                    f"{installed.stderr.strip()[-500:]}")
    return command


def publish_course(folder: Path) -> Path:
    """A bare repository holding the files git tracks here, as they are on disk, on
    branch main: what GitHub would serve."""
    source = folder / "source"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("the course is not a git checkout here, and the hub pulls what git tracks")
    tracked = listed.stdout.split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    run(["git", "init", "--quiet", "--initial-branch=main"], cwd=source)
    run(["git", "add", "--all"], cwd=source)
    run(["git", "-c", "user.name=Course", "-c", "user.email=course@example.org", "commit",
         "--quiet", "--message", "The course"], cwd=source)
    remote = folder / "remote" / REPO.split("/")[1]
    run(["git", "clone", "--quiet", "--bare", str(source), str(remote)])
    return remote


HUB_CONFIG = """\
c = get_config()  # noqa: F821 (JupyterHub's config files are run with it defined)
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"  # any name, any password: a test hub only
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"  # servers as local processes, homes in {folder}/homes
c.SimpleLocalProcessSpawner.home_dir_template = "{folder}/homes/{{username}}"
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--allow-root", "--LabApp.user_settings_dir={folder}/settings"]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = {timeout}
c.Spawner.http_timeout = {timeout}
"""


# No news or update notifications over the page; every cell in the page.
@pytest.fixture(scope="module")
def jupyter_hub(tmp_path_factory):
    """A JupyterHub on 127.0.0.1 and the course published beside it. Yields (the hub's
    address, the published repository, the folder holding the learners' homes)."""
    for package in ("jupyterhub", "nbgitpuller"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed: pip install -e '.[test]'")
    if shutil.which("git") is None:
        pytest.skip("no git, which nbgitpuller needs")
    proxy = install_proxy()
    folder = tmp_path_factory.mktemp("hub")
    remote = publish_course(folder)
    write_lab_settings(folder / "settings")
    port = free_port()
    (folder / "jupyterhub_config.py").write_text(HUB_CONFIG.format(
        port=port, hub_port=free_port(), proxy_port=free_port(), proxy=str(proxy),
        folder=folder, python=sys.executable, timeout=START_TIMEOUT))
    env = {**os.environ, "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(16),
           "JUPYTER_CONFIG_DIR": str(folder / "config"), "PYTHONUNBUFFERED": "1"}
    log = (folder / "hub.log").open("w")
    hub = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f",
                            str(folder / "jupyterhub_config.py")],
                           cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)
    address = f"http://127.0.0.1:{port}"
    try:
        wait_until_it_answers(hub, f"{address}/hub/api", "JupyterHub", folder / "hub.log",
                              START_TIMEOUT)
        yield address, remote, folder / "homes"
    finally:
        stop_process_tree(psutil.Process(hub.pid))
        log.close()
        ARTIFACTS.mkdir(exist_ok=True)  # the hub's log, to read when the test fails
        shutil.copy(folder / "hub.log", ARTIFACTS / "jupyterhub.log")


def test_the_nbgitpuller_link_opens_a_working_notebook_on_the_hub(page, jupyter_hub):
    address, remote, homes = jupyter_hub
    link = nbgitpuller_url(address, REPO, NOTEBOOK, ref="main", url=remote.as_uri())
    page.goto(link)
    # The hub asks who the learner is, then starts their server, which pulls the course.
    page.locator("#username_input").fill(LEARNER)
    page.locator("#password_input").fill("any password")
    page.locator("#login_submit").click()
    page.wait_for_url(f"**/user/{LEARNER}/lab/tree/**", timeout=SPAWN_TIMEOUT)
    wait_for_kernel(page)
    clone = homes / LEARNER / REPO.split("/")[1]
    assert (clone / NOTEBOOK).is_file() and (clone / "helpers" / "__init__.py").is_file()
    assert page.url.split("?")[0].endswith(f"/lab/tree/{REPO.split('/')[1]}/{NOTEBOOK}")
    clear_all_outputs(page)  # the clone's notebook was saved with its outputs
    cells = [cell for cell in nbformat.read(clone / NOTEBOOK, as_version=4).cells
             if cell.cell_type == "code"]
    shown = next(number for number, cell in enumerate(cells) if "_explorer(" in cell.source)
    run_cells(page, [0, 1, shown, shown + 1])  # setup, imports, build, show
    assert_no_error_outputs(page)
    setup_output = page.locator(f"{PANEL} .jp-CodeCell").first.locator(
        ".jp-OutputArea-output").inner_text()
    assert "Course ready: helpers from this course's folder." in setup_output
    explorer = page.locator(EXPLORER).first
    explorer.scroll_into_view_if_needed()
    explorer.locator("img").first.wait_for(timeout=IMAGE_TIMEOUT)
    control = explorer.locator(".widget-hbox").first.locator(":scope > *").first
    [(_label, move)] = control_moves(page, control)
    before = image_src(explorer)
    move()
    page.wait_for_function(
        "([selector, before]) => document.querySelector(selector + ' img')?.src !== before",
        arg=[EXPLORER, before], timeout=IMAGE_TIMEOUT)
    assert_no_error_outputs(page)
    # The learner changes a file of their clone; the lecturer publishes a fix; the same
    # link brings the fix into the clone and keeps the learner's change.
    own_file = clone / "solutions" / "01_self_attention" / "stable_softmax.py"
    with own_file.open("a", encoding="utf-8") as solution:
        solution.write("# my own note\n")
    source = remote.parent.parent / "source"
    with (source / "README.md").open("a", encoding="utf-8") as readme:
        readme.write("\nA fix published after the class started.\n")
    run(["git", "-c", "user.name=Course", "-c", "user.email=course@example.org", "commit",
         "--quiet", "--all", "--message", "A fix"], cwd=source)
    run(["git", "push", "--quiet", str(remote), "main"], cwd=source)
    page.goto(link)
    page.wait_for_url(f"**/user/{LEARNER}/lab/tree/**", timeout=SPAWN_TIMEOUT)
    assert "A fix published after the class started." in (clone / "README.md").read_text(
        encoding="utf-8")
    assert own_file.read_text(encoding="utf-8").endswith("# my own note\n")
