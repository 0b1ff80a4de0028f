"""FigureExplorer (helpers.widgets.explorer): errors shown in the widget, buttons; and the
tests' way of stepping through controls (tools.explorer_step.step)."""

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


def test_building_an_explorer_leaves_what_exists_out_of_later_garbage_collections():
    import gc

    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    explorer = self_attention_explorer()
    try:
        assert gc.get_freeze_count() > 10_000  # the modules of torch and matplotlib, ...
        assert all(thing is not explorer for thing in gc.get_objects())  # and the explorer
    finally:
        gc.unfreeze()  # the other tests' objects stay as they were
