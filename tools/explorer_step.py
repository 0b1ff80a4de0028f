"""Moving an explorer's control one step as a person would, through ipywidgets' API.

Shared by the widget tests, the benchmarks and the package profiles
(.ci/profiles/check_profile.py); it needs ipywidgets only (7 or 8), so that a copy of the
course on another package stack can use it."""

import ipywidgets as widgets


def step(explorer, name: str) -> None:
    """Move the explorer's control ``name`` one step, as a person would: the next option
    (wrapping round; a text box with suggestions, a ``Combobox``, takes the suggestion
    after the text it shows, or the first one after a typed text), the next slider value
    (back to the minimum past the end), the other state of a checkbox, or a click. The
    explorer updates its picture as for any change."""
    control = explorer.controls[name]
    if isinstance(control, widgets.Button):
        control.click()
    elif isinstance(control.value, bool):
        control.value = not control.value
    elif isinstance(control, widgets.Combobox):
        options = list(control.options)
        at = options.index(control.value) if control.value in options else -1
        control.value = options[(at + 1) % len(options)]
    elif hasattr(control, "options"):
        control.index = (control.index + 1) % len(control.options)
    else:
        next_value = control.value + control.step
        control.value = control.min if next_value > control.max else next_value
