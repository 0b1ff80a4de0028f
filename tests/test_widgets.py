"""Explorers driven headlessly: set a control's value, inspect the figure."""

import numpy as np

from helpers.attention import projected_attention_weights
from helpers.data import example_inputs
from helpers.widgets import self_attention_explorer


def heatmap_array(explorer):
    return explorer.figure.axes[0].images[0].get_array().copy()


def test_every_control_changes_the_picture():
    explorer = self_attention_explorer()
    for name, value in [("d_k", 256), ("scaled", False), ("query", 4)]:
        before = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.last_error is None
        assert explorer.image.value != before, f"changing {name} left the image as it was"


def test_heatmap_shows_the_model_and_updates_in_place():
    explorer = self_attention_explorer(seed=3)
    image_artist = explorer.figure.axes[0].images[0]
    explorer.controls["d_k"].value = 64
    explorer.controls["scaled"].value = False
    expected = projected_attention_weights(example_inputs(), 64, scaled=False, seed=3).numpy()
    np.testing.assert_allclose(heatmap_array(explorer), expected, rtol=1e-6)
    assert explorer.figure.axes[0].images[0] is image_artist


def test_query_control_moves_the_outline_and_the_bars():
    explorer = self_attention_explorer()
    explorer.controls["query"].value = 5
    outline = explorer.figure.axes[0].patches[0]
    assert outline.get_y() == 4.5
    bars = [bar.get_height() for bar in explorer.figure.axes[1].patches]
    np.testing.assert_allclose(bars, heatmap_array(explorer)[5], rtol=1e-6)


def test_an_error_while_redrawing_is_shown_in_the_widget():
    explorer = self_attention_explorer()
    explorer._redraw = lambda **values: (_ for _ in ()).throw(ValueError("d_k too small"))
    explorer.controls["d_k"].value = 4
    assert isinstance(explorer.last_error, ValueError)
    assert "d_k too small" in explorer.message.value


def test_a_button_control_passes_its_click_count():
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from helpers.widgets import FigureExplorer

    figure, ax = plt.subplots()
    plt.close(figure)
    seen = []
    button = widgets.Button(description="resample")
    explorer = FigureExplorer({"resample": button}, figure, lambda resample: seen.append(resample))
    button.click()
    button.click()
    assert seen == [0, 1, 2] and explorer.clicks == {"resample": 2}
