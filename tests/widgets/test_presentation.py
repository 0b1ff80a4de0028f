"""Every explorer factory in helpers.widgets gives something a person can find and use."""

import inspect

import ipywidgets as widgets
import pytest
import torch

import helpers.widgets
from helpers.widgets import EXPLORER_CLASS, EXPLORERS, FigureExplorer

FACTORIES = list(EXPLORERS.values())


def test_every_explorer_factory_is_registered():
    found = {name for name, function in vars(helpers.widgets).items()
             if name.endswith("_explorer") and inspect.isfunction(function)}
    assert found == set(EXPLORERS), "add new explorers to helpers.widgets.EXPLORERS"


def test_there_are_explorers():
    assert FACTORIES


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
    explorer.step(next(iter(explorer.controls)))
    assert explorer.picture().data == bytes(explorer.image.value)
    for name, control in explorer.controls.items():
        assert control.description.strip(), f"control {name!r} has no description"
        assert not control.disabled, f"control {name!r} is disabled"
        if isinstance(control, widgets.Button):
            assert not control.description.isspace()


def test_explorer_css_is_scoped_to_explorers():
    explorer = FACTORIES[0]()
    style = explorer.children[0]
    assert isinstance(style, widgets.HTML) and "<style>" in style.value
    rules = [line for line in style.value.splitlines() if "{" in line]
    assert all(line.lstrip().startswith(f".{EXPLORER_CLASS}") for line in rules)


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda function: function.__name__)
def test_building_and_moving_an_explorer_leaves_the_global_random_state_alone(factory):
    state = torch.get_rng_state()
    explorer = factory()
    for _ in range(3):
        for name in explorer.controls:
            explorer.step(name)
    assert explorer.last_error is None
    assert torch.equal(torch.get_rng_state(), state)
