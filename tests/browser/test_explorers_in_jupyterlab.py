"""Every notebook, run in JupyterLab in a real browser; every explorer, moved by keyboard.

For each notebook (a copy with outputs cleared): open it, wait until its kernel is
really ready, run all cells, check that no cell shows an error, then in every explorer
(found by its CSS class, so new notebooks are covered without changes here) move each
control the way a person would and check that the picture changes. The time from each
move to the new picture is printed in the summary, beside a floor measured the same way in
the same browser before and after the notebooks: a bare IntSlider that swaps an Image
between two ready-made PNGs (conftest.FLOOR_CELL), i.e. the widget round trip and the
picture's transfer, decoding and painting, with no figure drawn. No timing is asserted.
On failure a screenshot is saved in test-artifacts/.
"""

import re

import nbformat
import pytest

from .conftest import (
    ARTIFACTS,
    FLOOR_LATENCIES,
    FLOOR_NOTEBOOK,
    FLOOR_PICTURES,
    LATENCIES,
    NOTEBOOKS,
    PICTURE_SIZES,
)
from .lab import (
    EXPLORER,
    IMAGE_TIMEOUT,
    PANEL,
    assert_no_error_outputs,
    control_moves,
    image_src,
    run_all_cells,
    wait_for_kernel,
)

pytestmark = pytest.mark.browser

MOVES_PER_CONTROL = 3  # a person moves a control a few steps, not once
FLOOR_MOVES = 15  # per floor measurement (two: before and after the notebooks)


def uses_an_explorer(notebook) -> bool:
    cells = nbformat.read(notebook, as_version=4).cells
    return any(re.search(r"\w+_explorer\(", cell.source)
               for cell in cells if cell.cell_type == "code")


def timed_move(page, explorer, move):
    """Do `move()`, wait for the explorer's new picture; return the milliseconds, as the
    page measured them, from the input event of the move (a key, a click, a choice in a
    list: the first to reach the explorer) to the new picture decoded and painted. The
    test's own steps before the event (finding the control, focusing it) do not count."""
    explorer.evaluate("""root => {
        window.__courseStart = null;
        window.__courseShown = null;
        const started = () => { window.__courseStart ??= performance.now(); };
        for (const kind of ['keydown', 'pointerdown', 'click', 'input', 'change']) {
            root.addEventListener(kind, started, {capture: true, once: true});
        }
        const img = root.querySelector('img');
        window.__courseObserver?.disconnect();
        window.__courseObserver = new MutationObserver(() => {
            img.decode().catch(() => null).then(() => requestAnimationFrame(() => {
                window.__courseShown ??= performance.now();
            }));
        });
        window.__courseObserver.observe(img, {attributes: true, attributeFilter: ['src']});
    }""")
    move()
    page.wait_for_function("() => window.__courseShown !== null", timeout=IMAGE_TIMEOUT)
    start, shown = page.evaluate("() => [window.__courseStart, window.__courseShown]")
    assert start is not None, "the move reached the explorer as no input event"
    return shown - start


def picture_size(explorer) -> str:
    return explorer.locator("img").first.evaluate(
        "img => `${img.naturalWidth} x ${img.naturalHeight}`")


def open_notebook(page, base, token, name):
    # reset: start from an empty workspace, not with the notebooks of earlier tests open
    page.goto(f"{base}/lab/tree/{name}?reset&token={token}")
    wait_for_kernel(page)


def measure_floor(page, jupyter_lab, when):
    """Open the floor notebook, run it, and time FLOOR_MOVES moves of its slider."""
    base, token, _ = jupyter_lab
    open_notebook(page, base, token, FLOOR_NOTEBOOK)
    run_all_cells(page)
    assert_no_error_outputs(page)
    floor = page.locator(f"{PANEL} .latency-floor")
    floor.locator("img").first.wait_for(timeout=IMAGE_TIMEOUT)
    [(_label, move)] = control_moves(page, floor.locator(".widget-slider").first)
    FLOOR_LATENCIES[when] = [timed_move(page, floor, move) for _ in range(FLOOR_MOVES)]
    PICTURE_SIZES["floor"] = picture_size(floor)
    if not FLOOR_PICTURES:
        FLOOR_PICTURES.append(page.locator(
            f"{PANEL} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']"
        ).first.inner_text().strip())


def test_latency_floor_before_the_notebooks(page, jupyter_lab):
    measure_floor(page, jupyter_lab, "before")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_runs_and_every_explorer_answers(page, jupyter_lab, notebook, request):
    base, token, _ = jupyter_lab
    open_notebook(page, base, token, notebook.name)
    run_all_cells(page)
    assert_no_error_outputs(page)
    explorers = page.locator(EXPLORER)
    if uses_an_explorer(notebook):
        assert explorers.count() > 0, "the notebook builds an explorer, but none is shown"
    times, sizes = [], []
    for index in range(explorers.count()):
        explorer = explorers.nth(index)
        explorer.scroll_into_view_if_needed()
        explorer.locator("img").first.wait_for(timeout=IMAGE_TIMEOUT)
        sizes.append(picture_size(explorer))
        ARTIFACTS.mkdir(exist_ok=True)
        explorer.screenshot(path=ARTIFACTS / f"{notebook.stem}-explorer-{index}.png")
        controls = explorer.locator(".widget-hbox").first.locator(":scope > *")
        assert controls.count() > 0, f"explorer {index} has no controls"
        for position in range(controls.count()):
            for label, move in control_moves(page, controls.nth(position)) * MOVES_PER_CONTROL:
                before = image_src(explorer)
                try:
                    times.append(timed_move(page, explorer, move))
                except Exception as error:
                    raise AssertionError(
                        f"explorer {index}: moving its {label} (control {position}) did not "
                        f"change the picture") from error
                assert image_src(explorer) != before
                message = explorer.locator(".course-explorer-message").inner_text().strip()
                assert not message, f"explorer {index} shows an error: {message}"
        assert_no_error_outputs(page)
    if times:
        LATENCIES[notebook.name] = times
        PICTURE_SIZES[notebook.name] = ", ".join(dict.fromkeys(sizes))


def test_latency_floor_after_the_notebooks(page, jupyter_lab):
    measure_floor(page, jupyter_lab, "after")
