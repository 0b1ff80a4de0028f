"""Explorers driven headlessly: set a control's value, inspect the figure."""

import numpy as np

from helpers.attention import projected_attention_weights
from helpers.data import example_inputs
from helpers.widgets import self_attention_explorer


class BlankDrawing:
    """A figure that draws nothing: for testing what an explorer does with its controls."""

    def __init__(self):
        import matplotlib.pyplot as plt

        self.figure = plt.figure(figsize=(2, 1))
        plt.close(self.figure)

    def draw(self, view):
        pass


def heatmap_array(explorer):
    return explorer.figure.axes[0].collections[0].get_array().copy()


def test_every_control_changes_the_picture():
    explorer = self_attention_explorer()
    for name, value in [("d_k", 256), ("scaled", False), ("query", 4)]:
        before = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.last_error is None
        assert explorer.image.value != before, f"changing {name} left the image as it was"


def test_heatmap_shows_the_model_and_updates_in_place():
    explorer = self_attention_explorer(seed=3)
    image_artist = explorer.figure.axes[0].collections[0]
    explorer.controls["d_k"].value = 64
    explorer.controls["scaled"].value = False
    expected = projected_attention_weights(example_inputs(), 64, scaled=False, seed=3).numpy()
    np.testing.assert_allclose(heatmap_array(explorer), expected, rtol=1e-6)
    assert explorer.figure.axes[0].collections[0] is image_artist


def test_query_control_moves_the_outline_and_the_bars():
    explorer = self_attention_explorer()
    explorer.controls["query"].value = 5
    outline = explorer.figure.axes[0].patches[0]
    assert outline.get_y() == 4.5
    bars = [bar.get_height() for bar in explorer.figure.axes[1].patches]
    np.testing.assert_allclose(bars, heatmap_array(explorer)[5], rtol=1e-6)


def test_an_error_while_computing_is_shown_in_the_widget():
    explorer = self_attention_explorer()
    shown = explorer.image.value
    explorer.compute = lambda **values: (_ for _ in ()).throw(ValueError("d_k too small"))
    explorer.controls["d_k"].value = 4
    assert isinstance(explorer.last_error, ValueError)
    assert "d_k too small" in explorer.message.value
    assert explorer.image.value == shown  # the last good picture stays


def test_the_view_is_computed_without_a_figure_and_is_what_is_drawn():
    from helpers.widgets.self_attention import self_attention_view

    view = self_attention_view(query=2, d_k=16, scaled=False, seed=3)
    expected = projected_attention_weights(example_inputs(), 16, scaled=False, seed=3).numpy()
    np.testing.assert_allclose(view.weights, expected, rtol=1e-6)
    assert view.bars_title == f"query 'starts': largest weight {expected[2].max():.2f}"
    assert "d_k = 16, not scaled" in view.heatmap_title
    explorer = self_attention_explorer(seed=3)
    for name, value in [("query", 2), ("d_k", 16), ("scaled", False)]:
        explorer.controls[name].value = value
    assert np.array_equal(explorer.view.weights, view.weights)
    assert (explorer.view.query, explorer.view.bars_title) == (view.query, view.bars_title)
    np.testing.assert_allclose(heatmap_array(explorer), view.weights, rtol=1e-6)
    assert explorer.figure.axes[1].get_title() == view.bars_title


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


def test_causal_explorer_controls_change_the_picture_and_match_the_module():
    import torch

    from helpers.attention import CausalAttention
    from helpers.data import example_batch
    from helpers.widgets import causal_attention_explorer

    explorer = causal_attention_explorer(seed=123)
    torch.manual_seed(123)
    module = CausalAttention(3, 2, context_length=6, dropout=0.5).eval()
    _, weights = module(example_batch(1), return_weights=True)
    np.testing.assert_allclose(heatmap_array(explorer), weights[0].detach().numpy(), rtol=1e-6)
    for name, value in [("query", 5), ("sequence", 1), ("mode", "train (dropout 0.5)")]:
        before = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.last_error is None
        assert explorer.image.value != before, f"changing {name} left the image as it was"


def test_causal_explorer_arrows_add_up_to_the_context_vector():
    from helpers.widgets import causal_attention_explorer

    explorer = causal_attention_explorer()
    explorer.controls["query"].value = 4
    value_ax = explorer.figure.axes[1]
    steps, total = value_ax.collections[1], value_ax.collections[2]
    tips = steps.get_offsets() + np.stack([steps.U, steps.V], axis=1)
    np.testing.assert_allclose(tips[-1], [total.U[0], total.V[0]], rtol=1e-5, atol=1e-6)
    weights_row = heatmap_array(explorer)[4]
    assert np.all(np.nonzero(weights_row)[0] <= 4)  # no weight on a future token


def test_causal_explorer_names_every_visible_token_without_overlapping_names():
    from helpers.data import TOKENS
    from helpers.widgets import causal_attention_explorer

    explorer = causal_attention_explorer()
    value_ax = explorer.figure.axes[1]
    renderer = explorer.figure.canvas.get_renderer()
    for sequence, query in [(0, 5), (1, 5), (0, 2)]:
        explorer.controls["sequence"].value = sequence
        explorer.controls["query"].value = query
        names = [text for text in value_ax.texts if text.get_text()]  # the dots' names
        shown = [word for text in names for word in text.get_text().split("\n")]
        order = TOKENS if sequence == 0 else TOKENS[::-1]
        assert sorted(shown) == sorted(order[: query + 1])  # each visible token, once
        extents = [text.get_window_extent(renderer) for text in names]
        for a in range(len(extents)):
            for b in range(a + 1, len(extents)):
                assert not extents[a].overlaps(extents[b]), (names[a].get_text(),
                                                             names[b].get_text())


def test_step_moves_each_kind_of_control_one_step_and_wraps():
    import ipywidgets as widgets

    from helpers.widgets.explorer import FigureExplorer

    seen = []
    controls = {"n": widgets.IntSlider(value=2, min=1, max=3),
                "choice": widgets.Dropdown(options=["a", "b"], value="b"),
                "flag": widgets.Checkbox(value=False),
                "again": widgets.Button()}
    explorer = FigureExplorer(controls, lambda **values: seen.append(values), BlankDrawing())
    for name in ["n", "n", "choice", "flag", "again"]:
        explorer.step(name)
    assert explorer.values() == {"n": 1, "choice": "a", "flag": True, "again": 1}
    assert len(seen) == 6  # the first picture, then one redraw per step
