"""Interactive explorers built on ipywidgets.

Each explorer is a ``FigureExplorer``: a row of controls above one matplotlib figure,
in two parts. A pure function computes a *view* from the controls' values (what the
picture shows: arrays, labels, captions), tested without any figure; a *drawing* builds
the figure once and, given a view, changes its artists in place (``FigureExplorer`` says
what a drawing declares). The figure is then rendered into an ``ipywidgets.Image`` by
blitting (``helpers.rendering``). The maths behind each view is ``helpers.attention``'s,
its demonstrations included (``helpers.attention.demos``).

One module per notebook's explorer, imported from there
(``from helpers.widgets.dropout import dropout_explorer``); the course's manifest,
course.toml, names them in course order.

Factories return the widget; they never call ``display``. In a notebook, leave the widget
as the last expression of a cell. A factory run again closes the explorer it built before
(``closes_the_one_before``), so that a cell run again leaves no explorer behind in memory.
"""

from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    EXPLORER_CLASS,
    EXPLORER_CSS,
    FigureExplorer,
)

__all__ = [
    "FigureExplorer",
    "CONTROL_STYLE",
    "CONTROL_LAYOUT",
    "EXPLORER_CLASS",
    "EXPLORER_CSS",
]
