"""Where an explorer cannot be drawn (its cell has not run, the widget state is missing),
the notebook shows its text/plain fallback: a short sentence, not the widget tree (a plain
VBox's fallback is its whole tree, the explorer's CSS included)."""

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display
from IPython.utils.capture import capture_output

from helpers.widgets.explorer import PLACEHOLDER
from tools.course import explorers

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def shown_data(widget) -> dict:
    """What IPython sends to the front end to display ``widget`` (ipywidgets 8 through
    ``_repr_mimebundle_``, 7 through ``_ipython_display_``: both publish it)."""
    InteractiveShell.instance()
    with capture_output() as captured:
        display(widget)
    [output] = captured.outputs
    return output.data


EXPLORERS = explorers()


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_an_explorer_shows_a_short_readable_placeholder(name):
    explorer = EXPLORERS[name]()
    data = shown_data(explorer)
    assert data["text/plain"] == PLACEHOLDER == repr(explorer)
    assert WIDGET_VIEW in data, "the live widget is still what a running notebook shows"
    assert len(PLACEHOLDER) <= 110, "ipywidgets cuts a longer text/plain"
    assert "<" not in PLACEHOLDER and "(" not in PLACEHOLDER
