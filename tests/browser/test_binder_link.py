"""Binder's launch link, followed as Binder follows it once the image runs.

Binder starts a Jupyter server in the image's home (the repository at the commit that
last changed environment.yml or postBuild) and sends the browser to the server's address,
then "/", then the link's urlpath, with the server's token added. Here JupyterLab on
127.0.0.1 serves a clone of the course standing in for that home, from this environment;
the course is published as a local bare repository standing in for GitHub. The urlpath that
`tools.links.binder_pull_url` writes must make nbgitpuller pull the course into the
folder named after the repository, open the notebook in JupyterLab there, and the
notebook's setup cell must then take the helpers from that pulled copy.

Skipped, saying why, where nbgitpuller or git is missing.
"""

import importlib.util
import shutil
from urllib.parse import parse_qs, urlparse

import pytest

from tools.browser.lab import PANEL, run_cells, wait_for_kernel
from tools.browser.servers import running_jupyter_lab
from tools.links import binder_pull_url, environment_ref, pull_folder

from .test_jupyterhub import REPO, publish_course, run

pytestmark = pytest.mark.browser

NOTEBOOK = "notebooks/01_self_attention.ipynb"
OPEN_TIMEOUT = 120_000  # ms, from the link to the notebook on screen (a clone, a kernel)


@pytest.fixture(scope="module")
def binder_server(tmp_path_factory):
    """JupyterLab serving a stand-in for the image's home. Yields (its address, its
    token, the home folder, the published repository)."""
    if importlib.util.find_spec("nbgitpuller") is None:
        pytest.skip("nbgitpuller is not installed: pip install -e '.[test]'")
    if shutil.which("git") is None:
        pytest.skip("no git, which nbgitpuller needs")
    folder = tmp_path_factory.mktemp("binder")
    remote = publish_course(folder)
    home = folder / "home"  # the image's home: the repository, checked out
    run(["git", "clone", "--quiet", str(remote), str(home)])
    with running_jupyter_lab(home, folder) as (base, token):
        yield base, token, home, remote


def test_the_binder_link_pulls_the_course_and_opens_the_notebook(browser, binder_server):
    base, token, home, remote = binder_server
    link = binder_pull_url(REPO, NOTEBOOK, environment_ref(), "main", url=remote.as_uri())
    [urlpath] = parse_qs(urlparse(link).query)["urlpath"]
    assert urlpath.startswith("git-pull?")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{base}/{urlpath}&token={token}")  # as BinderHub redirects
        folder = pull_folder(REPO)
        page.wait_for_url(f"**/lab/tree/{folder}/{NOTEBOOK}**", timeout=OPEN_TIMEOUT)
        wait_for_kernel(page)
        clone = home / folder
        assert (clone / NOTEBOOK).is_file() and (clone / "helpers" / "__init__.py").is_file()
        run_cells(page, [0])  # the setup cell
        output = page.locator(f"{PANEL} .jp-CodeCell").first.locator(
            ".jp-OutputArea-output").inner_text()
        assert "Course ready: helpers from this course's folder." in output
    finally:
        page.close()
