"""dataflow_figure: the pipeline's steps in order, what is highlighted, errors a learner
can read, and text that stays readable when the figure is shown 850 px wide."""

from itertools import pairwise

import matplotlib.pyplot as plt
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.text import Text

from helpers.dataflow import DATAFLOW_STEPS, HIGHLIGHT_FACE, PLAIN_FACE, dataflow_figure

SHOWN_WIDTH_PX = 850
SCREEN_DPI = 100  # matplotlib's default: 850 px shown = 8.5 inches of figure at full size


def drawn(fig):
    """The figure drawn at the size it is shown (850 px wide); its renderer."""
    fig.set_dpi(SHOWN_WIDTH_PX / fig.get_figwidth())
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def visible_texts(fig):
    return [text for text in fig.findobj(Text) if text.get_visible() and text.get_text().strip()]


def test_the_steps_are_the_fixed_names_in_pipeline_order():
    assert DATAFLOW_STEPS == ("input", "projections", "scores", "scale", "mask", "softmax",
                              "dropout", "weighted_sum", "context")
    fig = dataflow_figure()
    assert isinstance(fig, Figure)
    assert list(fig.step_boxes) == list(DATAFLOW_STEPS)
    assert [box.get_gid() for box in fig.step_boxes.values()] == list(DATAFLOW_STEPS)


def test_boxes_read_left_to_right_in_two_rows():
    fig = dataflow_figure()
    corners = [fig.step_boxes[step].get_bbox() for step in DATAFLOW_STEPS]
    first, second = corners[:5], corners[5:]
    assert all(a.x1 < b.x0 for a, b in pairwise(first))
    assert all(a.x1 < b.x0 for a, b in pairwise(second))
    assert min(box.y0 for box in first) > max(box.y1 for box in second)  # row 1 above row 2
    assert second[0].x0 == pytest.approx(first[0].x0)  # the second row starts under the first


def test_highlighted_steps_are_coloured_and_named_in_the_title():
    fig = dataflow_figure(highlight=("mask",))
    assert fig.highlighted == ("mask",)
    assert fig.step_boxes["mask"].get_facecolor() == to_rgba(HIGHLIGHT_FACE)
    for step in DATAFLOW_STEPS:
        if step != "mask":
            assert fig.step_boxes[step].get_facecolor() == to_rgba(PLAIN_FACE), step
    title = fig.title_text.get_text()
    assert title.endswith("Highlighted: causal mask")


@pytest.mark.parametrize("highlight, expected", [
    ((), "No step highlighted"),
    (("scale", "mask"), "Highlighted: scale and causal mask"),
    (("softmax", "mask", "scores"), "Highlighted: scores, causal mask and softmax"),
    (tuple(step for step in DATAFLOW_STEPS if step not in ("mask", "dropout")),
     "Highlighted: all but causal mask and dropout"),
    (DATAFLOW_STEPS, "Highlighted: every step"),
    ("dropout", "Highlighted: dropout"),  # one name given as a string
])
def test_the_title_says_what_is_highlighted(highlight, expected):
    fig = dataflow_figure(highlight=highlight)
    assert fig.title_text.get_text().splitlines()[-1] == expected
    lit = {step for step, box in fig.step_boxes.items()
           if box.get_facecolor() == to_rgba(HIGHLIGHT_FACE)}
    assert lit == set(fig.highlighted)


@pytest.mark.parametrize("highlight", [("Mask",), ("mask", "attention"), ("weighted sum",)])
def test_an_unknown_step_name_is_named_with_the_valid_ones(highlight):
    with pytest.raises(ValueError) as raised:
        dataflow_figure(highlight=highlight)
    message = str(raised.value)
    assert "highlight" in message
    wrong = next(name for name in highlight if name not in DATAFLOW_STEPS)
    assert repr(wrong) in message
    assert ", ".join(DATAFLOW_STEPS) in message


def test_a_highlight_that_is_not_a_collection_is_named():
    with pytest.raises(TypeError, match=r"highlight must be a tuple of step names.*got int"):
        dataflow_figure(highlight=3)


def test_the_figure_is_returned_not_shown():
    before = plt.get_fignums()
    dataflow_figure(highlight=("scores",))
    assert plt.get_fignums() == before  # pyplot holds no reference: nothing shows by itself


def test_no_text_is_under_11_pt_when_shown_850_px_wide():
    fig = dataflow_figure(highlight=("mask",))
    texts = visible_texts(fig)
    assert len(texts) == 2 * len(DATAFLOW_STEPS) + 1  # name and detail per box, the title
    scale = SHOWN_WIDTH_PX / (fig.get_figwidth() * SCREEN_DPI)
    sizes = {text.get_text(): text.get_fontsize() * scale for text in texts}
    smallest = min(sizes, key=sizes.get)
    assert sizes[smallest] >= 11, f"{smallest!r} is shown at {sizes[smallest]:.1f} pt"


def test_every_text_fits_inside_its_box_and_the_figure():
    for highlight in ((), ("mask",), DATAFLOW_STEPS):
        fig = dataflow_figure(highlight=highlight)
        renderer = drawn(fig)
        figure_box = fig.bbox
        for step, texts in fig.step_texts.items():
            box = fig.step_boxes[step].get_window_extent(renderer)
            for text in texts:
                extent = text.get_window_extent(renderer)
                assert box.x0 < extent.x0 and extent.x1 < box.x1, (step, text.get_text())
                assert box.y0 < extent.y0 and extent.y1 < box.y1, (step, text.get_text())
        title = fig.title_text.get_window_extent(renderer)
        assert figure_box.x0 <= title.x0 and title.x1 <= figure_box.x1, title
        assert title.y1 <= figure_box.y1
        top_of_boxes = max(b.get_window_extent(renderer).y1 for b in fig.step_boxes.values())
        assert title.y0 > top_of_boxes  # the title overlaps no box


def test_highlighted_text_contrasts_with_its_box():
    fig = dataflow_figure(highlight=("softmax",))
    name, detail = fig.step_texts["softmax"]
    assert to_rgba(name.get_color()) != to_rgba(HIGHLIGHT_FACE)
    assert name.get_color() == detail.get_color() == "white"
    assert fig.step_texts["mask"][0].get_color() != "white"  # dark text on the light boxes
