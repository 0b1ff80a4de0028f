"""Notebook 05: the multi-head explorer's maths and the explorer driven headlessly (its
exercises' checks are in test_multi_head_checks.py)."""

import numpy as np
import pytest
import torch

from helpers.attention import (
    MultiHeadAttention,
    causal_mask,
)
from helpers.attention.demos import head_split_problem, multi_head_weights
from helpers.data import TOKENS, example_inputs
from helpers.widgets.multi_head import SEQUENCE_ORDERS, multi_head_explorer, multi_head_view

# ---------------------------------------------------------------- pure functions


@pytest.mark.parametrize("d_out, num_heads", [(4, 2), (6, 3), (12, 4), (1, 1), (7, 7)])
def test_no_problem_when_the_heads_share_d_out_equally(d_out, num_heads):
    assert head_split_problem(d_out, num_heads) is None


@pytest.mark.parametrize("d_out, num_heads, words", [
    (5, 2, ["d_out = 5", "2 heads", "4 or 6"]),
    (7, 3, ["d_out = 7", "3 heads", "6 or 9"]),
    (1, 2, ["d_out = 1", "pick d_out = 2,"]),
])
def test_the_problem_names_the_values_and_what_would_work(d_out, num_heads, words):
    problem = head_split_problem(d_out, num_heads)
    for word in words:
        assert word in problem, f"{word!r} missing from: {problem}"


def test_multi_head_weights_are_the_modules_weights():
    x = example_inputs()
    weights = multi_head_weights(x, 6, 3, seed=7)
    torch.manual_seed(7)
    module = MultiHeadAttention(3, 6, context_length=6, dropout=0.0, num_heads=3)
    _, expected = module(x.unsqueeze(0), return_weights=True)
    torch.testing.assert_close(weights, expected[0].detach())


@pytest.mark.parametrize("weight_std", [None, 2.0])
def test_multi_head_weights_are_causal_rows_that_sum_to_one(weight_std):
    weights = multi_head_weights(example_inputs(), 8, 4, seed=1, weight_std=weight_std)
    assert weights.shape == (4, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 6))
    assert (weights[:, ~causal_mask(6)] == 0).all()


def test_multi_head_weights_leave_the_global_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    first = multi_head_weights(example_inputs(), 4, 2, seed=5, weight_std=2.0)
    torch.testing.assert_close(torch.rand(3), expected)
    torch.testing.assert_close(multi_head_weights(example_inputs(), 4, 2, seed=5, weight_std=2.0),
                               first)


def test_larger_weights_make_the_heads_differ():
    default = multi_head_weights(example_inputs(), 6, 3, seed=123)
    larger = multi_head_weights(example_inputs(), 6, 3, seed=123, weight_std=2.0)
    spread = lambda w: (w[0] - w[1]).abs().max() + (w[1] - w[2]).abs().max()  # noqa: E731
    assert spread(larger) > 4 * spread(default)


def test_multi_head_weights_reject_an_uneven_split_in_plain_words():
    with pytest.raises(ValueError, match="cannot be shared equally among 2 heads"):
        multi_head_weights(example_inputs(), 5, 2)


# ---------------------------------------------------------------- the view, without a figure


@pytest.mark.parametrize("sequence, num_heads, d_out, clicks", [
    ("running example", 4, 12, 0), ("shuffled", 3, 6, 2), ("reversed", 1, 5, 1)])
def test_the_view_holds_every_heads_weights_and_says_how_d_out_is_split(sequence, num_heads,
                                                                         d_out, clicks):
    view = multi_head_view(sequence, num_heads, d_out, clicks, seed=11, weight_std=2.0)
    order = list(SEQUENCE_ORDERS[sequence])
    expected = multi_head_weights(example_inputs()[order], d_out, num_heads, seed=11 + clicks,
                                  weight_std=2.0).numpy()
    assert view.weights.shape == (num_heads, 6, 6)
    np.testing.assert_allclose(view.weights, expected, rtol=1e-6)
    assert view.token_labels == tuple(TOKENS[i] for i in order)
    assert view.notice == ""
    assert view.heading.startswith(f"{sequence}: H = {num_heads} heads")
    assert f"{d_out} / {num_heads} = {d_out // num_heads}" in view.heading
    assert f"projection seed {11 + clicks}" in view.heading


def test_the_view_of_an_uneven_split_has_no_panel_and_says_what_would_fit():
    view = multi_head_view("reversed", 2, 5, 1, seed=11)
    assert view.weights.shape == (0, 6, 6)  # no head to draw
    assert view.notice == head_split_problem(5, 2)
    assert "H = 2, d_out = 5: no multi-head split" in view.heading
    assert "projection seed 12" in view.heading
    assert view.token_labels == tuple(TOKENS[::-1])


# ---------------------------------------------------------------- the explorer, headless


def visible_panels(explorer):
    """The panels that show a head: the others are grey all over and say why."""
    drawing = explorer.drawing
    assert all(heatmap.ax.get_visible() for heatmap in drawing.heatmaps)  # none hidden
    shown = []
    for heatmap, note in zip(drawing.heatmaps, drawing.unused_notes, strict=True):
        if note.get_text():
            assert heatmap.masked.all()  # nothing to misread
            assert note.get_text() in ("no split",
                                       f"not used\nwith H = {len(explorer.view.weights)}")
        else:
            shown.append(heatmap.ax)
    return shown


def tick_texts(labels):
    return [label.get_text() for label in labels]


def assert_draws_its_view(explorer):
    """The visible panels, their weights, their token labels and the heading are the
    view's."""
    view = explorer.view
    heatmaps = explorer.drawing.heatmaps
    assert len(visible_panels(explorer)) == len(view.weights)
    for h, heatmap in enumerate(heatmaps[:len(view.weights)]):
        np.testing.assert_allclose(heatmap.image.get_array(), view.weights[h], rtol=1e-6)
        assert tick_texts(heatmap.ax.get_xticklabels()) == list(view.token_labels)
        # the rows are named once, in the first panel
        rows = list(view.token_labels) if h == 0 else [""] * 6
        assert tick_texts(heatmap.ax.get_yticklabels()) == rows
    assert explorer.figure.get_suptitle() == view.heading


def test_starts_with_every_panel_shown_and_a_d_out_each_h_divides():
    explorer = multi_head_explorer()  # its static picture is read without a kernel: no gap
    assert explorer.last_error is None and explorer.message.value == ""
    assert len(explorer.drawing.heatmaps) == 4
    assert len(visible_panels(explorer)) == explorer.controls["num_heads"].value == 4
    d_out = explorer.controls["d_out"].value
    assert all(head_split_problem(d_out, h) is None for h in range(1, 5))
    expected = multi_head_view(**explorer.values())  # the default seed and spread
    np.testing.assert_array_equal(explorer.view.weights, expected.weights)
    assert explorer.view.heading == expected.heading
    assert_draws_its_view(explorer)


@pytest.mark.parametrize("num_heads, d_out", [(1, 5), (4, 12)])
def test_panels_show_the_view_and_update_in_place(num_heads, d_out):
    explorer = multi_head_explorer(seed=11)
    images = [heatmap.image for heatmap in explorer.drawing.heatmaps]
    explorer.controls["num_heads"].value = num_heads
    explorer.controls["d_out"].value = d_out
    assert explorer.last_error is None
    expected = multi_head_weights(example_inputs(), d_out, num_heads, seed=11,
                                  weight_std=2.0).numpy()
    np.testing.assert_allclose(explorer.view.weights, expected, rtol=1e-6)
    assert_draws_its_view(explorer)
    assert [heatmap.image for heatmap in explorer.drawing.heatmaps] == images  # same artists
    assert f"{d_out} / {num_heads} = {d_out // num_heads}" in explorer.figure.get_suptitle()


def test_every_control_change_draws_the_view():
    explorer = multi_head_explorer()
    changes = [("sequence", "reversed"), ("num_heads", 2), ("d_out", 8), ("sequence", "shuffled")]
    for name, value in changes:
        explorer.controls[name].value = value
        assert explorer.last_error is None
        assert_draws_its_view(explorer)
    explorer.controls["new_weights"].click()
    assert "seed 124" in explorer.figure.get_suptitle()
    assert_draws_its_view(explorer)


def test_the_sequence_control_relabels_every_panel_at_once():
    explorer = multi_head_explorer(seed=3)
    for sequence in ["shuffled", "reversed", "running example", "shuffled"]:
        explorer.controls["sequence"].value = sequence
        names = [TOKENS[i] for i in SEQUENCE_ORDERS[sequence]]
        first = explorer.drawing.heatmaps[0].ax
        assert tick_texts(first.get_yticklabels()) == names
        for ax in visible_panels(explorer):
            assert tick_texts(ax.get_xticklabels()) == names
        h, d_out = explorer.controls["num_heads"].value, explorer.controls["d_out"].value
        expected = multi_head_weights(example_inputs()[list(SEQUENCE_ORDERS[sequence])], d_out,
                                      h, seed=3, weight_std=2.0)
        np.testing.assert_allclose(explorer.drawing.heatmaps[0].image.get_array(),
                                   expected[0].numpy(), rtol=1e-6)


def test_an_uneven_split_gets_a_friendly_message_and_recovers():
    explorer = multi_head_explorer()
    explorer.controls["num_heads"].value = 2
    explorer.controls["d_out"].value = 4
    picture = explorer.image.value
    explorer.controls["d_out"].value = 5
    assert explorer.last_error is None and explorer.message.value == ""  # guidance, no error
    for words in ("d_out = 5", "2 heads", "4 or 6"):
        assert words in explorer.notice.value
    assert visible_panels(explorer) == []  # no panel to misread
    assert "no multi-head split" in explorer.figure.get_suptitle()
    assert explorer.image.value != picture
    explorer.controls["sequence"].value = "reversed"  # relabelled once panels come back
    explorer.controls["d_out"].value = 6
    assert explorer.notice.value == ""
    assert len(visible_panels(explorer)) == 2
    assert_draws_its_view(explorer)
    assert explorer.image.value != picture


def test_panels_keep_their_place_whichever_h_the_explorer_starts_with():
    """The layout is made once: greying panels out moves none, and an explorer starting on
    an uneven split (no panel in use) places them as the default one."""
    explorer = multi_head_explorer()
    places = [ax.get_position().bounds for ax in explorer.figure.axes]
    for name, value in [("num_heads", 1), ("d_out", 7), ("num_heads", 3), ("d_out", 9)]:
        explorer.controls[name].value = value
        assert [ax.get_position().bounds for ax in explorer.figure.axes] == places
    uneven = multi_head_explorer(max_d_out=10)  # H = 4 does not divide 10
    assert visible_panels(uneven) == []
    np.testing.assert_allclose([ax.get_position().bounds for ax in uneven.figure.axes], places)
