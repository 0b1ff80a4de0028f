"""Notebook 08's heads explorer: the view as plain data, and the widget driven headlessly
(set a control, inspect the figure)."""

import ipywidgets as widgets
import numpy as np
import pytest
import torch

from helpers.attention import causal_mask
from helpers.gpt.data import encode
from helpers.gpt.training import head_scores, induction_targets
from helpers.widgets.explorer import FigureExplorer
from helpers.widgets.heads import (
    EXAMPLE_SEQUENCES,
    heads_explorer,
    heads_view,
    untrained_models,
)
from tests.figures import assert_shows_a_full_draw
from tests.gpt.support import small_model


@pytest.fixture(scope="module")
def models():
    return untrained_models()


def heatmap_array(explorer, head):
    return np.asarray(explorer.drawing.heatmaps[head].image.get_array())


def test_view_is_the_models_weights_and_scores(models):
    view = heads_view("abc abc ab", 1, "untrained, masked", models=models)
    ids = encode("abcabcab")
    with torch.no_grad():
        _, weights = models["untrained, masked"](ids[None], return_weights=True)
    np.testing.assert_allclose(view.weights, weights[0, 1].numpy(), rtol=1e-6)
    assert view.tokens == tuple("abcabcab")
    assert np.array_equal(view.allowed, causal_mask(8).numpy())
    assert np.array_equal(view.induction_cells, induction_targets(ids).numpy())
    scores = head_scores(models["untrained, masked"], ids[None])
    for h, title in enumerate(view.titles):
        assert f"previous {scores['previous token'][1, h].item():.2f}" in title
        assert f"induction {scores['induction'][1, h].item():.2f}" in title
        assert "next 0.00" in title  # the mask: no weight on the next letter


def test_unmasked_view_allows_every_cell_and_no_repeat_has_no_induction_score(models):
    view = heads_view("abcd", 0, "untrained, unmasked", models=models)
    assert view.allowed.all() and "no mask" in view.heading
    assert all("induction –" in title for title in view.titles)


@pytest.mark.parametrize("sequence, words", [
    ("xyz", ["a to p", "'xyz'"]),
    ("ab" * 13, ["26 letters", "context_length=24"]),
    ("Hello", ["a-z", "'H'"]),
])
def test_a_sequence_the_model_cannot_read_is_explained(models, sequence, words):
    with pytest.raises(ValueError) as raised:
        heads_view(sequence, 0, "untrained, masked", models=models)
    for word in words:
        assert word in str(raised.value)


def test_every_control_change_draws_the_view_in_the_heatmaps(models):
    explorer = heads_explorer(models)
    assert isinstance(explorer, FigureExplorer) and explorer.last_error is None
    for name, value in [("layer", 0), ("model", "untrained, unmasked"),
                        ("sequence", EXAMPLE_SEQUENCES[1])]:
        explorer.controls[name].value = value
        assert explorer.last_error is None, name
        for h in range(2):
            np.testing.assert_allclose(heatmap_array(explorer, h), explorer.view.weights[h],
                                       rtol=1e-6)
            assert explorer.drawing.heatmaps[h].ax.get_title() == explorer.view.titles[h]
    outlines = explorer.drawing.outlines[0]
    rows, columns = np.nonzero(explorer.view.induction_cells)
    assert list(outlines.get_xdata()) == list(columns)
    assert list(outlines.get_ydata()) == list(rows)


def test_a_typed_sequence_of_another_length_is_drawn_whole(models):
    explorer = heads_explorer(models)
    explorer.controls["sequence"].value = "hop hop"
    assert explorer.last_error is None
    assert heatmap_array(explorer, 0).shape == (6, 6)
    labels = [text.get_text() for text in explorer.drawing.heatmaps[0].ax.get_xticklabels()]
    assert labels == list("hophop")
    assert_shows_a_full_draw(explorer.image.value, explorer.figure, "after a new length")
    explorer.controls["layer"].value = 0  # then the same length, changed in place
    assert_shows_a_full_draw(explorer.image.value, explorer.figure, "after a layer change")


def test_an_unreadable_sequence_is_said_in_the_widget_and_the_picture_stays(models):
    explorer = heads_explorer(models)
    shown = explorer.image.value
    explorer.controls["sequence"].value = "xyz"
    assert isinstance(explorer.last_error, ValueError)
    assert "a to p" in explorer.message.value
    assert explorer.image.value == shown


def test_the_sequence_is_picked_from_suggestions_or_typed(models):
    box = heads_explorer(models).controls["sequence"]
    assert isinstance(box, widgets.Combobox)  # a text box with suggestions
    assert list(box.options) == list(EXAMPLE_SEQUENCES) and not box.ensure_option


def test_without_models_two_untrained_ones():
    explorer = heads_explorer()
    assert list(explorer.controls["model"].options) == ["untrained, masked",
                                                        "untrained, unmasked"]


def test_models_of_different_shapes_or_kinds_are_refused():
    with pytest.raises(ValueError, match=r"same layers and heads.*\(1, 2\), \(2, 2\)"):
        heads_explorer({"a": small_model(), "b": small_model(num_layers=1)})
    with pytest.raises(TypeError, match="TinyGPT"):
        heads_explorer({"a": torch.nn.Linear(2, 2)})


def test_panels_of_a_length_seen_before_come_back_as_they_were_built(models):
    explorer = heads_explorer(models)
    first = explorer.drawing.heatmaps
    explorer.controls["sequence"].value = "hop hop"  # another length: panels built for it
    assert explorer.drawing.heatmaps is not first
    explorer.controls["sequence"].value = EXAMPLE_SEQUENCES[0]  # the first length again
    assert explorer.last_error is None
    assert explorer.drawing.heatmaps is first  # kept, not built again
    labels = [text.get_text() for text in first[0].ax.get_xticklabels()]
    assert labels == list(EXAMPLE_SEQUENCES[0].replace(" ", ""))
    for h in range(2):
        np.testing.assert_allclose(heatmap_array(explorer, h), explorer.view.weights[h],
                                   rtol=1e-6)
    assert_shows_a_full_draw(explorer.image.value, explorer.figure, "a length come back")
    explorer.controls["sequence"].value = "hophop"  # a length seen, other letters
    assert_shows_a_full_draw(explorer.image.value, explorer.figure, "same length, new letters")
