"""Driving JupyterLab in the browser as a person would: wait for the kernel, run all
cells or some, read the outputs, move an explorer's controls. Shared by the browser tests."""

import re
import time

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

# Everything is looked up in the notebook on screen, never in another (hidden) tab.
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
EXPLORER = f"{PANEL} .course-explorer"
KERNEL_READY_TIMEOUT = 120_000  # ms
RUN_ALL_TIMEOUT = 600  # s: notebook 08 trains for minutes when the machine is busy
RUN_ALL_START_TIMEOUT = 15_000  # ms, until the first cell of a Run All starts
IMAGE_TIMEOUT = 15_000  # ms


def wait_for_kernel(page):
    """Wait until the notebook on screen shows its cells and its kernel is really ready."""
    page.wait_for_selector(f"{PANEL} .jp-Cell", timeout=KERNEL_READY_TIMEOUT)
    # On a cold server the indicator reads idle before a kernel is attached: wait until
    # the toolbar names a kernel *and* the indicator says idle.
    page.wait_for_function(
        """() => {
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            const name = panel?.querySelector('[data-jp-item-name=kernelName]');
            const state = panel?.querySelector('.jp-Notebook-ExecutionIndicator');
            return name && !/No Kernel/.test(name.textContent) && name.textContent.trim()
                && state && state.getAttribute('data-status') === 'idle';
        }""", timeout=KERNEL_READY_TIMEOUT)


def open_notebook(page, base: str, token: str, name: str):
    """Open the notebook ``name`` of the server at ``base`` in an empty workspace (not
    beside the notebooks of earlier tests) and wait for its kernel."""
    page.goto(f"{base}/lab/tree/{name}?reset&token={token}")
    wait_for_kernel(page)


def clear_all_outputs(page):
    """Edit > Clear Outputs of All Cells: what a notebook saved with its outputs shows is
    gone, so that what is on screen afterwards was computed here."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Edit$")).click()
    page.locator(".lm-Menu-itemLabel",
                 has_text=re.compile(r"^Clear Outputs of All Cells$")).click()
    page.wait_for_function(
        "selector => document.querySelectorAll(selector).length === 0",
        arg=f"{PANEL} .jp-CodeCell .jp-OutputArea-output", timeout=IMAGE_TIMEOUT)


def click_run_all(page):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def run_all_cells(page):
    """Run All, and wait until every code cell has run and the kernel is idle. A Run All
    that started nothing within RUN_ALL_START_TIMEOUT (the kernel was still connecting)
    is clicked again, once."""
    click_run_all(page)
    started = f"{PANEL} .jp-CodeCell .jp-InputArea-prompt"
    try:
        page.wait_for_function(
            """selector => [...document.querySelectorAll(selector)]
                .some(prompt => /\\[(\\*|\\d+)\\]/.test(prompt.textContent))""",
            arg=started, timeout=RUN_ALL_START_TIMEOUT)
    except PlaywrightTimeoutError:
        click_run_all(page)
    code_cells = page.locator(f"{PANEL} .jp-CodeCell").count()
    deadline = time.monotonic() + RUN_ALL_TIMEOUT
    while True:
        prompts = page.locator(f"{PANEL} .jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
        done = [text for text in prompts if re.fullmatch(r"\[\d+\]:", text.strip())]
        status = page.locator(f"{PANEL} .jp-Notebook-ExecutionIndicator").first.get_attribute(
            "data-status")
        if len(done) == code_cells and status == "idle":
            return
        assert time.monotonic() < deadline, f"run all did not finish: prompts {prompts}"
        time.sleep(0.5)


def run_cells(page, numbers):
    """Run the code cells ``numbers`` (0 for the first code cell), in that order, each as a
    person would (click it, Shift+Enter), waiting until each has run and the kernel is idle."""
    for number in numbers:
        cell = page.locator(f"{PANEL} .jp-CodeCell").nth(number)
        cell.scroll_into_view_if_needed()
        cell.locator(".jp-InputArea-prompt").click()
        page.keyboard.press("Shift+Enter")
        prompt = cell.locator(".jp-InputArea-prompt")
        deadline = time.monotonic() + RUN_ALL_TIMEOUT
        while True:
            done = re.fullmatch(r"\[\d+\]:", prompt.inner_text().strip())
            status = page.locator(f"{PANEL} .jp-Notebook-ExecutionIndicator").first\
                .get_attribute("data-status")
            if done and status == "idle":
                break
            assert time.monotonic() < deadline, f"code cell {number} did not finish"
            time.sleep(0.2)


def assert_no_error_outputs(page):
    errors = page.locator(
        f"{PANEL} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, "a cell shows an error:\n" + "\n---\n".join(
        errors.all_inner_texts())


# Whether nothing on the page is moving from one place or look to another: no CSS
# transition running (reveal.js's slide transitions, RISE scaling a slide in are
# transitions; the arrow that bounces as a hint for ever is an animation, not counted).
# getAnimations() applies pending style changes first, so a transition that a key press
# has just set off is seen.
STILL = """() => document.getAnimations().every(animation =>
    !(animation instanceof CSSTransition) || animation.playState !== 'running')"""


def wait_until_still(page, timeout: int = 10_000):
    """Wait until no transition runs on the page (STILL), then for one more painted frame."""
    page.wait_for_function(STILL, timeout=timeout)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => done()))")


def image_src(explorer):
    return explorer.locator("img").first.get_attribute("src")


def control_moves(page, control):
    """The ways a person moves this control, as (label, function) pairs, by keyboard."""
    classes = control.get_attribute("class") or ""
    if "widget-slider" in classes:
        handle = control.locator(".noUi-handle").first

        def slide():
            handle.focus()
            at_end = handle.get_attribute("aria-valuenow") == handle.get_attribute(
                "aria-valuemax")
            page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
        return [("slider", slide)]
    if "widget-dropdown" in classes:
        select = control.locator("select")

        def choose():
            # Picked from the list as with a mouse: inside JupyterLab, pressing an arrow
            # key on the closed <select> did not change it in headless Chromium.
            index, count = select.evaluate("s => [s.selectedIndex, s.options.length]")
            select.select_option(index=(index + 1) % count)
        return [("dropdown", choose)]
    if "widget-text" in classes:
        field = control.locator("input").first

        def retype():
            # A text box with suggestions (a Combobox): type the next suggestion, then Enter.
            suggestions = field.evaluate(
                "i => [...(i.list ? i.list.options : [])].map(option => option.value)")
            current = field.input_value()
            others = [text for text in suggestions if text != current] or [current[::-1]]
            field.fill(others[0])
            field.press("Enter")
        return [("text box", retype)]
    if "widget-checkbox" in classes:
        box = control.locator("input[type=checkbox]")
        return [("checkbox", lambda: (box.focus(), page.keyboard.press("Space")))]
    if "widget-toggle-buttons" in classes:
        buttons = control.locator("button")

        def toggle_next():
            chosen = [i for i in range(buttons.count())
                      if "mod-active" in (buttons.nth(i).get_attribute("class") or "")]
            target = buttons.nth(((chosen[0] if chosen else 0) + 1) % buttons.count())
            target.focus()
            page.keyboard.press("Enter")
        return [("toggle buttons", toggle_next)]
    if "widget-toggle-button" in classes or "widget-button" in classes or \
            control.evaluate("e => e.tagName") == "BUTTON":
        return [("button", lambda: (control.focus(), page.keyboard.press("Enter")))]
    raise AssertionError(f"an explorer control the test does not know how to move: {classes}")


def move_and_wait_for_a_new_picture(explorer, move):
    """Do ``move()``, then wait until the explorer shows another picture (its image's
    source changes); an AssertionError if none comes within IMAGE_TIMEOUT."""
    picture = explorer.locator("img").first
    before = picture.get_attribute("src")
    move()
    expect(picture).not_to_have_attribute("src", before, timeout=IMAGE_TIMEOUT)
