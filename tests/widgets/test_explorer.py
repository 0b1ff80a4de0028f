"""FigureExplorer (helpers.widgets.explorer): errors shown in the widget, buttons, closing
an explorer and building one again; and the tests' way of stepping through controls
(tools.explorer_step.step)."""

import gc
import weakref

import pytest
import torch

from helpers.widgets.causal_attention import causal_attention_explorer
from helpers.widgets.dropout import dropout_explorer
from helpers.widgets.self_attention import self_attention_explorer
from tools.explorer_step import step


class BlankDrawing:
    """A figure that draws nothing: for testing what an explorer does with its controls."""

    animated = []

    def __init__(self):
        import matplotlib.pyplot as plt

        self.figure = plt.figure(figsize=(2, 1))
        plt.close(self.figure)

    def draw(self, view):
        pass


def test_an_error_while_computing_is_shown_in_the_widget():
    explorer = self_attention_explorer()
    shown = explorer.image.value
    explorer.compute = lambda **values: (_ for _ in ()).throw(ValueError("d_k too small"))
    explorer.controls["d_k"].value = 4
    assert isinstance(explorer.last_error, ValueError)
    assert "d_k too small" in explorer.message.value
    assert explorer.image.value == shown  # the last good picture stays


def test_a_button_control_passes_its_click_count():
    import ipywidgets as widgets

    from helpers.widgets import FigureExplorer

    seen = []
    button = widgets.Button(description="resample")
    explorer = FigureExplorer({"resample": button}, lambda resample: seen.append(resample),
                              BlankDrawing())
    button.click()
    button.click()
    assert seen == [0, 1, 2] and explorer.clicks == {"resample": 2}


def test_step_moves_each_kind_of_control_one_step_and_wraps():
    import ipywidgets as widgets

    from helpers.widgets.explorer import FigureExplorer

    seen = []
    controls = {"n": widgets.IntSlider(value=2, min=1, max=3),
                "choice": widgets.Dropdown(options=["a", "b"], value="b"),
                "flag": widgets.Checkbox(value=False),
                "again": widgets.Button(),
                "typed": widgets.Combobox(value="own text", options=["x", "y"],
                                          ensure_option=False)}
    explorer = FigureExplorer(controls, lambda **values: seen.append(values), BlankDrawing())
    for name in ["n", "n", "choice", "flag", "again", "typed"]:
        step(explorer, name)
    assert explorer.values() == {"n": 1, "choice": "a", "flag": True, "again": 1, "typed": "x"}
    for expected in ["y", "x"]:  # then the next suggestion, wrapping round
        step(explorer, "typed")
        assert explorer.values()["typed"] == expected
    assert len(seen) == 9  # the first picture, then one redraw per step


def widgets_of(explorer) -> list:
    """The explorer and every widget in it, its controls among them, and their layouts and
    styles (widgets too)."""
    import ipywidgets as widgets

    found, boxes = [], [explorer]
    while boxes:
        widget = boxes.pop()
        found += [widget, widget.layout, *([widget.style] if hasattr(widget, "style") else [])]
        if isinstance(widget, widgets.Box):
            boxes += widget.children
    return found


def test_closing_an_explorer_closes_every_widget_and_lets_its_figure_go():
    """IPython's output history keeps what a cell showed, the explorer itself: closed, it
    must not keep its figure (and all that is drawn on it) in memory."""
    explorer = self_attention_explorer()
    shown = widgets_of(explorer)
    assert len(shown) > 15 and all(widget.comm is not None for widget in shown)
    figure = weakref.ref(explorer.figure)
    explorer.close()
    assert all(widget.comm is None for widget in shown)  # ipywidgets lets them go
    gc.collect()
    assert figure() is None
    explorer.controls["d_k"].value = 16  # a closed explorer draws no more
    assert explorer.last_error is None


def test_closing_an_explorer_frees_its_pixels_at_once():
    """Not at Python's next full garbage collection, which may come many builds later."""
    explorer = self_attention_explorer()
    canvas = weakref.ref(explorer.renderer.canvas)
    gc.disable()
    try:
        explorer.close()
        assert canvas() is None
    finally:
        gc.enable()


def test_a_factory_closes_the_explorer_it_built_before():
    first = self_attention_explorer()
    other_kind = causal_attention_explorer()
    second = self_attention_explorer(seed=1)
    assert first.comm is None and first.figure is None
    assert second.comm is not None and other_kind.comm is not None
    step(second, "d_k")
    assert second.last_error is None


def test_a_factory_that_fails_leaves_the_explorer_before_open():
    explorer = dropout_explorer()
    with pytest.raises(ValueError):
        dropout_explorer(torch.ones(2, 3, 4))
    assert explorer.comm is not None
    step(explorer, "p")
    assert explorer.last_error is None


def test_explorers_built_again_and_again_leave_no_figure_behind():
    """A cell run again and again, its explorers kept as IPython's output history keeps
    them: only the last one's figure stays."""
    kept, figures = [], []
    for seed in range(4):
        explorer = self_attention_explorer(seed=seed)
        step(explorer, "query")
        kept.append(explorer)
        figures.append(weakref.ref(explorer.figure))
    gc.collect()
    assert [figure() is not None for figure in figures] == [False, False, False, True]
