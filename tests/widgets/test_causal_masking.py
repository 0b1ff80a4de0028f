"""Notebook 02's explorer (helpers.widgets.causal_masking): its view computed without a
figure, its drawing, its controls."""

import numpy as np
import pytest
import torch

from helpers.attention import (
    causal_mask,
)
from helpers.widgets.causal_masking import (
    MASKING_STRATEGIES,
    causal_masking_explorer,
    causal_masking_view,
)
from helpers.widgets.causal_masking import running_example_scores as explorer_scores
from tests.reference import REFERENCE_MASKED_WEIGHTS, running_example_scores
from tests.widgets.support import assert_steps_draw_in_place


def view_of(strategy="renormalise", T=6, query=2):
    return causal_masking_view(strategy, T, query, scores=running_example_scores())


def test_the_explorer_scores_are_the_running_example_s_and_leave_the_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    scores = explorer_scores()
    assert torch.equal(torch.rand(3), expected)
    torch.testing.assert_close(scores, running_example_scores())


@pytest.mark.parametrize("strategy", list(MASKING_STRATEGIES))
def test_view_of_either_strategy_shows_the_reference_weights_and_rows_summing_to_one(strategy):
    view = view_of(strategy)
    np.testing.assert_allclose(view.weights, REFERENCE_MASKED_WEIGHTS.numpy(), atol=5e-5)
    np.testing.assert_allclose(view.weight_sums, np.ones(6), rtol=1e-6)
    assert view.weight_sum_texts == ("1.00",) * 6
    np.testing.assert_array_equal(view.scores, running_example_scores().numpy())
    np.testing.assert_array_equal(view.allowed, causal_mask(6).numpy())
    assert view.inside.all()


def test_view_of_strategy_1_shows_the_softmax_with_the_future_zeroed():
    scores = running_example_scores()
    mask = causal_mask(6)
    view = view_of("renormalise")
    zeroed = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
    np.testing.assert_allclose(view.middle, zeroed.numpy(), rtol=1e-6)
    np.testing.assert_allclose(view.zeroed_sums, zeroed.sum(-1).numpy(), rtol=1e-6)
    assert view.zeroed_sum_texts == tuple(f"{total:.2f}" for total in zeroed.sum(-1).tolist())
    assert view.zeroed_sums[0] < view.zeroed_sums[5] == pytest.approx(1.0)
    # The cells say what they hold: the kept weights, and 0 where the future was.
    assert view.middle_text[2, 0] == f"{zeroed[2, 0].item():.2f}"
    assert list(view.middle_text[~mask.numpy()]) == ["0"] * 15
    assert view.middle_range == (0.0, 1.0)
    assert "future × 0" in view.middle_title
    kept = zeroed[2].sum().item()
    assert view.caption == (f"query 'starts' (row 2): softmax over all 6 keys leaves {kept:.2f} "
                            f"on the allowed ones; divided by {kept:.2f}:\n0.38 + 0.31 + 0.31 "
                            "= 1.00")


def test_view_of_strategy_2_shows_the_scores_with_the_future_at_minus_infinity():
    scores = running_example_scores()
    allowed = causal_mask(6).numpy()
    view = view_of("neg_inf", query=3)
    np.testing.assert_array_equal(view.middle[allowed], scores.numpy()[allowed])
    assert np.all(view.middle[~allowed] == -np.inf)
    assert list(view.middle_text[~allowed]) == ["-inf"] * 15
    # written as in the scores' panel, without the leading zero
    assert view.middle_text[3, 1] == f"{scores[3, 1].item():.2f}".replace("0.", ".", 1)
    np.testing.assert_array_equal(view.middle_text[allowed], view.score_text[allowed])
    largest = scores.abs().max().item()
    assert view.middle_range == view.score_range == (-largest, largest)
    assert "-inf" in view.middle_title
    # No step where the weights fall short of 1: no orange bars, no numbers for them.
    assert not view.zeroed_sums.any() and view.zeroed_sum_texts == ("",) * 6
    assert view.caption == ("query 'with' (row 3): exp(-inf) = 0 for the 2 later keys; one "
                            "softmax over the 4 allowed keys:\n0.28 + 0.25 + 0.25 + 0.23 = 1.00")
    assert view_of("neg_inf", query=5).caption.startswith(
        "query 'step' (row 5): no later key to block;")


def test_view_of_a_shorter_sequence_keeps_the_first_rows_and_the_query_inside():
    view = view_of("renormalise", T=3, query=5)
    assert view.T == 3 and view.query == 2
    # A causal row does not depend on later tokens: the first 3 rows are the reference's.
    np.testing.assert_allclose(view.weights[:3, :3], REFERENCE_MASKED_WEIGHTS[:3, :3].numpy(),
                               atol=5e-5)
    assert not view.weights[3:].any() and not view.weights[:, 3:].any()
    assert view.inside.sum() == 9 and view.inside[:3, :3].all()
    assert view.allowed.sum() == 6 and not view.allowed[:, 3:].any()
    assert set(view.middle_text[~view.inside]) == {""}
    assert view.weight_sum_texts[3:] == ("", "", "") != view.weight_sum_texts[:3]
    assert view.zeroed_sum_texts[3:] == ("", "", "")
    assert view.caption.startswith("query 'starts' (row 2): softmax over all 3 keys")
    assert view_of(T=1, query=0).caption.startswith(
        "query 'Your' (row 0): softmax over the only key leaves 1.00")


def test_view_rejects_an_unknown_strategy():
    with pytest.raises(ValueError, match="strategy"):
        view_of("softmax first")


def test_the_drawing_shows_the_view():
    explorer = causal_masking_explorer()
    for name, value in [("strategy", "neg_inf"), ("T", 4), ("query", 1),
                        ("strategy", "renormalise")]:
        explorer.controls[name].value = value
        assert explorer.last_error is None
        view, drawing = explorer.view, explorer.drawing
        assert (view.strategy, view.T, view.query) == (explorer.controls["strategy"].value,
                                                      explorer.controls["T"].value,
                                                      explorer.controls["query"].value)
        for heatmap, values in [(drawing.score_map, view.scores),
                                (drawing.middle_map, view.middle),
                                (drawing.weight_map, view.weights)]:
            drawn = heatmap.image.get_array()  # a masked array: -inf is not a colour
            shown = np.isfinite(values)
            np.testing.assert_allclose(drawn[shown], values[shown])
        np.testing.assert_array_equal(drawing.middle_map.cell_text, view.middle_text)
        assert drawing.middle_map.image.get_clim() == view.middle_range
        assert drawing.middle_map.ax.get_title() == view.middle_title
        np.testing.assert_array_equal(drawing.weight_map.masked, ~view.allowed)
        for fader, outline in zip(drawing.faders, drawing.outlines, strict=True):
            faded = fader.get_array()[..., 3] > 0
            np.testing.assert_array_equal(faded, ~view.inside)
            assert (outline.get_y(), outline.get_width()) == (view.query - 0.5, view.T)
        heights = [bar.get_height() for bar in drawing.weight_bars]
        np.testing.assert_allclose(heights, view.weight_sums)
        np.testing.assert_allclose([bar.get_height() for bar in drawing.zeroed_bars],
                                   view.zeroed_sums)
        assert all(bar.get_visible() == (view.strategy == "renormalise")
                   for bar in drawing.zeroed_bars)
        assert [bar.get_linewidth() > 0 for bar in drawing.weight_bars] == \
            [row == view.query for row in range(6)]
        assert tuple(text.get_text() for text in drawing.weight_sum_labels) == \
            view.weight_sum_texts
        assert tuple(text.get_text() for text in drawing.zeroed_sum_labels) == \
            view.zeroed_sum_texts
        assert explorer.figure.get_suptitle() == view.caption
        np.testing.assert_array_equal(drawing.score_map.cell_text, view.score_text)


def test_scores_and_row_sums_are_written_apart():
    """Signed scores fit their cells without touching ("-.04", not "-0.04"); each row sum
    is written inside its bar or wholly above it, never across its top."""
    explorer = causal_masking_explorer()
    view, drawing = explorer.view, explorer.drawing
    assert view.score_text[0, 5] == "-.04" and view.score_text[1, 0] == ".33"
    assert view.score_text[5, 0] == ".24"
    renderer = explorer.figure.canvas.get_renderer()
    for labels, bars in [(drawing.weight_sum_labels, drawing.weight_bars),
                         (drawing.zeroed_sum_labels, drawing.zeroed_bars)]:
        for label, bar in zip(labels, bars, strict=True):
            if not label.get_text():
                continue
            text, top = label.get_window_extent(renderer), bar.get_window_extent(renderer).y1
            assert text.y1 <= top or text.y0 >= top, (label.get_text(), bar.get_height())


def test_control_changes_redraw_the_same_heatmaps():
    explorer = causal_masking_explorer()
    drawing = explorer.drawing
    heatmaps = (drawing.score_map, drawing.middle_map, drawing.weight_map)
    artists = [heatmap.image for heatmap in heatmaps]
    for name, value in [("strategy", "neg_inf"), ("T", 4), ("query", 0)]:
        explorer.controls[name].value = value
        assert explorer.last_error is None
    assert [heatmap.image for heatmap in heatmaps] == artists
    assert all(artist in explorer.figure.findobj() for artist in artists)


def test_once_drawn_no_control_change_redraws_the_whole_figure():
    explorer = causal_masking_explorer()
    assert_steps_draw_in_place(explorer)


def test_a_shorter_sequence_limits_the_query_slider():
    explorer = causal_masking_explorer()
    explorer.controls["query"].value = 5
    explorer.controls["T"].value = 3
    assert explorer.controls["query"].value == 2 and explorer.controls["query"].max == 2
    assert explorer.view.query == 2 and explorer.view.T == 3


def test_explorer_reached_by_many_changes_shows_what_a_fresh_one_shows():
    """Every picture comes from its view alone: after any path of changes, the picture is
    the one a new explorer draws for the same settings."""
    import io

    from PIL import Image

    def pixels(explorer):
        return np.asarray(Image.open(io.BytesIO(explorer.image.value)).convert("RGB"), float)

    travelled = causal_masking_explorer()
    strategies = [value for _, value in travelled.controls["strategy"].options]
    for name, value in [("query", 4), ("T", 3), ("query", 1), ("strategy", strategies[1]),
                        ("query", 2), ("T", 5), ("query", 4), ("strategy", strategies[0]),
                        ("query", 0)]:
        travelled.controls[name].value = value
    fresh = causal_masking_explorer()
    fresh.controls["T"].value = 5
    fresh.controls["query"].value = 0
    assert travelled.values() == fresh.values()
    difference = np.abs(pixels(travelled) - pixels(fresh)).max(axis=-1)
    assert (difference > 40).mean() < 0.002  # a blitted frame may differ by a faint pixel


def test_the_legend_names_both_kinds_of_bar_and_only_strategy_1_draws_the_orange_ones():
    explorer = causal_masking_explorer()
    names = [" ".join(text.get_text().split())
             for text in explorer.drawing.legend.get_texts()]
    assert "row sum of the weights" in names
    assert "row sum after zeroing the future (strategy 1)" in names
    for strategy, shown in [("neg_inf", False), ("renormalise", True)]:
        explorer.controls["strategy"].value = strategy
        assert [bar.get_visible() for bar in explorer.drawing.zeroed_bars] == [shown] * 6
