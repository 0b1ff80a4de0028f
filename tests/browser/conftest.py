"""A throwaway JupyterLab server and a headless Chromium, for the browser tests.

The tests run when a Chromium is found (/usr/bin/chromium, chromium or
chromium-browser on PATH, or the CHROMIUM environment variable); otherwise they are
reported as skipped with how to enable them. Every process started for them (servers.py)
is stopped by its id when the tests end, whether they passed or not.
"""

import pytest

from tools.browser.servers import ROOT, find_chromium, headless_chromium, jupyter_lab_server
from tools.course import notebook_paths

NOTEBOOKS = [ROOT / path for path in notebook_paths()]
ARTIFACTS = ROOT / "test-artifacts"
HOW_TO_ENABLE = ("no Chromium found: install one (Debian/Ubuntu: `apt-get install chromium`) "
                 "or set CHROMIUM=/path/to/chromium, then run `make test` again")


def pytest_collection_modifyitems(config, items):
    """Browser tests are slow; without a Chromium they are skipped, saying why."""
    browser = [item for item in items if "browser" in item.keywords]
    for item in browser:
        item.add_marker(pytest.mark.slow)
    if not find_chromium():
        for item in browser:
            item.add_marker(pytest.mark.skip(reason=HOW_TO_ENABLE))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Tell the page fixture that the test failed, so that it saves a screenshot."""
    outcome = yield
    if call.when == "call" and outcome.get_result().failed:
        item.failed_call = True


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1, a free port and a random token, serving copies of the
    notebooks with their outputs cleared; settings, runtime and workspace folders are
    temporary. Yields (base URL, token, folder of the notebooks)."""
    with jupyter_lab_server(tmp_path_factory.mktemp("lab"), NOTEBOOKS) as served:
        yield served


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
    """Headless Chromium driven by playwright, for the whole session."""
    with headless_chromium() as chromium:
        yield chromium
