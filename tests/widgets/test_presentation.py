"""Every explorer factory in helpers.widgets gives something a person can find and use."""

import importlib
import inspect
import pkgutil

import ipywidgets as widgets
import pytest

import helpers.widgets
from helpers.widgets import EXPLORER_CLASS, FigureExplorer
from tools.course import explorers
from tools.explorer_step import step

EXPLORERS = explorers()
FACTORIES = list(EXPLORERS.values())


def test_every_explorer_factory_is_in_the_manifest():
    found = set()
    for module_info in pkgutil.iter_modules(helpers.widgets.__path__):
        module = importlib.import_module(f"helpers.widgets.{module_info.name}")
        found |= {name for name, function in vars(module).items()
                  if name.endswith("_explorer") and inspect.isfunction(function)
                  and function.__module__ == module.__name__}
    assert found == set(EXPLORERS), "name every explorer in course.toml"


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda function: function.__name__)
def test_explorer_is_findable_labelled_and_shows_a_picture(factory):
    explorer = factory()
    assert isinstance(explorer, FigureExplorer)
    # How the browser tests find it: the CSS classes in the state the widget sends to the
    # page (Widget.get_state, public; "_dom_classes" is the key of the widget protocol).
    assert EXPLORER_CLASS in explorer.get_state()["_dom_classes"]
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert explorer.last_error is None and explorer.message.value == ""
    # the static picture a notebook shows is the widget's picture, as it is now
    assert explorer.picture().data == bytes(explorer.image.value)
    step(explorer, next(iter(explorer.controls)))
    assert explorer.picture().data == bytes(explorer.image.value)
    for name, control in explorer.controls.items():
        assert control.description.strip(), f"control {name!r} has no description"
        assert not control.disabled, f"control {name!r} is disabled"
        if isinstance(control, widgets.Button):
            assert not control.description.isspace()


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda function: function.__name__)
def test_building_an_explorer_again_closes_the_one_before(factory):
    """Its cell run again: the old explorer lets its widgets and its figure go
    (``closes_the_one_before``)."""
    first = factory()
    second = factory()
    assert first.comm is None and first.figure is None
    assert second.comm is not None and second.last_error is None


def test_explorer_css_is_scoped_to_explorers():
    explorer = FACTORIES[0]()
    style = explorer.children[0]
    assert isinstance(style, widgets.HTML) and "<style>" in style.value
    rules = [line for line in style.value.splitlines() if "{" in line]
    assert all(line.lstrip().startswith(f".{EXPLORER_CLASS}") for line in rules)
