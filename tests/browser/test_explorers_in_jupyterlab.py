"""Every notebook, run in JupyterLab in a real browser; every explorer, moved by keyboard.

For each notebook (a copy with outputs cleared): open it, wait until its kernel is
really ready, run all cells, check that no cell shows an error, then in every explorer
(found by its CSS class, so new notebooks are covered without changes here) move each
control the way a person would and check that the picture changes and no error is shown.
Two notebooks are then looked at on the dark theme (tests/browser/dark_theme.py), in the
same run. Each notebook is run once here; nbval runs it once more (with its second run of
every cell in the same kernel), and no other test runs a whole notebook.
On failure a screenshot is saved in test-artifacts/. How fast the pictures come is
measured apart, by benchmarks/browser_latency.py.
"""

import re

import nbformat
import pytest

from tools.browser.lab import (
    EXPLORER,
    IMAGE_TIMEOUT,
    assert_no_error_outputs,
    control_moves,
    move_and_wait_for_a_new_picture,
    open_notebook,
    run_all_cells,
)

from .conftest import ARTIFACTS, NOTEBOOKS
from .dark_theme import DARK_NOTEBOOKS, assert_it_reads_on_the_dark_theme

pytestmark = pytest.mark.browser

MOVES_PER_CONTROL = 1  # one step of each control, from the page, to a new picture (every
# position of every control is walked in-process: tests/widgets/test_explorer_walk.py)


def uses_an_explorer(notebook) -> bool:
    cells = nbformat.read(notebook, as_version=4).cells
    return any(re.search(r"\w+_explorer\(", cell.source)
               for cell in cells if cell.cell_type == "code")


# pytest-xdist (--dist loadscope) gives all the tests of a class to one worker: two classes,
# so that two workers share the notebooks, the two that run longest (training a model,
# generating text) in one of them.
LONGEST = {"08_tiny_gpt.ipynb", "09_generation_kv_cache.ipynb"}
LONG_ONES = [path for path in NOTEBOOKS if path.name in LONGEST]
OTHERS = [path for path in NOTEBOOKS if path.name not in LONGEST]


class TestTheLongestNotebooks:
    @pytest.mark.parametrize("notebook", LONG_ONES, ids=[path.name for path in LONG_ONES])
    def test_notebook_runs_and_every_explorer_answers(self, page, jupyter_lab, notebook):
        check_the_notebook_and_its_explorers(page, jupyter_lab, notebook)


class TestTheOtherNotebooks:
    @pytest.mark.parametrize("notebook", OTHERS, ids=[path.name for path in OTHERS])
    def test_notebook_runs_and_every_explorer_answers(self, page, jupyter_lab, notebook):
        check_the_notebook_and_its_explorers(page, jupyter_lab, notebook)


def check_the_notebook_and_its_explorers(page, jupyter_lab, notebook):
    base, token, _ = jupyter_lab
    open_notebook(page, base, token, notebook.name)
    run_all_cells(page)
    assert_no_error_outputs(page)
    explorers = page.locator(EXPLORER)
    if uses_an_explorer(notebook):
        assert explorers.count() > 0, "the notebook builds an explorer, but none is shown"
    for index in range(explorers.count()):
        explorer = explorers.nth(index)
        explorer.scroll_into_view_if_needed()
        explorer.locator("img").first.wait_for(timeout=IMAGE_TIMEOUT)
        ARTIFACTS.mkdir(exist_ok=True)
        explorer.screenshot(path=ARTIFACTS / f"{notebook.stem}-explorer-{index}.png")
        controls = explorer.locator(".widget-hbox").first.locator(":scope > *")
        assert controls.count() > 0, f"explorer {index} has no controls"
        for position in range(controls.count()):
            for label, move in control_moves(page, controls.nth(position)) * MOVES_PER_CONTROL:
                try:
                    move_and_wait_for_a_new_picture(explorer, move)
                except AssertionError as error:
                    raise AssertionError(
                        f"explorer {index}: moving its {label} (control {position}) did not "
                        f"change the picture") from error
                message = explorer.locator(".course-explorer-message").inner_text().strip()
                assert not message, f"explorer {index} shows an error: {message}"
        assert_no_error_outputs(page)
    if notebook.name in DARK_NOTEBOOKS:  # the same run, on the dark theme
        assert_it_reads_on_the_dark_theme(page, notebook.name)
