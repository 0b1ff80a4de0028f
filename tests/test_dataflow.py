"""dataflow_figure: the pipeline's steps in order, what is highlighted, the shapes and
steps each option adds, errors a learner can read, and text that stays readable when the
figure is shown 850 px wide."""

from dataclasses import dataclass
from itertools import pairwise

import matplotlib.pyplot as plt
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from matplotlib.text import Text

from helpers.dataflow import (
    CACHE_STEP,
    DATAFLOW_STEPS,
    HIGHLIGHT_FACE,
    KEY_VALUE_ROUTE,
    MASK_LABEL_CHARS,
    MULTI_HEAD_STEPS,
    PLAIN_FACE,
    QUERY_ROUTE,
    dataflow_figure,
    dataflow_steps,
)
from helpers.plotting import figure_description
from tests.figures import layout_problems

SHOWN_WIDTH_PX = 850
SCREEN_DPI = 100  # matplotlib's default: 850 px shown = 8.5 inches of figure at full size


@dataclass
class Parts:
    """A dataflow figure's parts, found by their gids."""

    steps: tuple  # the step names drawn, in pipeline order
    step_boxes: dict  # step -> its box
    step_texts: dict  # step -> (its name's Text, its detail's Text)
    title_text: Text
    note_text: Text | None
    highlighted: tuple  # the steps whose box is coloured, in pipeline order


def parts(fig) -> Parts:
    boxes = {box.get_gid(): box for box in fig.findobj(FancyBboxPatch) if box.get_gid()}
    texts = {}
    for text in fig.findobj(Text):
        if text.get_gid() in boxes:
            texts.setdefault(text.get_gid(), []).append(text)
    [title] = fig.findobj(lambda artist: artist.get_gid() == "title")
    notes = fig.findobj(lambda artist: artist.get_gid() == "note")
    lit = tuple(step for step, box in boxes.items()
                if box.get_facecolor() == to_rgba(HIGHLIGHT_FACE))
    return Parts(tuple(boxes), boxes, {step: tuple(pair) for step, pair in texts.items()},
                 title, notes[0] if notes else None, lit)


def drawn(fig):
    """The figure drawn at the size it is shown (850 px wide); its renderer."""
    fig.set_dpi(SHOWN_WIDTH_PX / fig.get_figwidth())
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def visible_texts(fig):
    return [text for text in fig.findobj(Text) if text.get_visible() and text.get_text().strip()]


PADDING_LABEL = ("causal & padding mask", "future, padded keys → −∞")
# Every option the notebooks use, and the ones between.
OPTIONS = [
    {},
    {"batched": True},
    {"heads": True},
    {"batched": True, "heads": True},
    {"batched": True, "mask_label": PADDING_LABEL},
    {"batched": True, "heads": True, "mask_label": PADDING_LABEL},
    {"cache": True},  # notebook 09
    {"batched": True, "cache": True},
    {"batched": True, "heads": True, "cache": True},
]

OPTION_IDS = ["default", "batched", "heads", "batched-heads", "batched-label",
              "batched-heads-label", "cache", "batched-cache", "batched-heads-cache"]


def steps_of(options) -> tuple:
    return dataflow_steps(heads=options.get("heads", False), cache=options.get("cache", False))


def test_the_steps_are_the_fixed_names_in_pipeline_order():
    assert DATAFLOW_STEPS == ("input", "projections", "scores", "scale", "mask", "softmax",
                              "dropout", "weighted_sum", "context")
    fig = dataflow_figure()
    assert isinstance(fig, Figure)
    assert list(parts(fig).step_boxes) == list(DATAFLOW_STEPS)
    assert [box.get_gid() for box in parts(fig).step_boxes.values()] == list(DATAFLOW_STEPS)


def test_boxes_read_left_to_right_in_two_rows():
    fig = dataflow_figure()
    corners = [parts(fig).step_boxes[step].get_bbox() for step in DATAFLOW_STEPS]
    first, second = corners[:5], corners[5:]
    assert all(a.x1 < b.x0 for a, b in pairwise(first))
    assert all(a.x1 < b.x0 for a, b in pairwise(second))
    assert min(box.y0 for box in first) > max(box.y1 for box in second)  # row 1 above row 2
    assert second[0].x0 == pytest.approx(first[0].x0)  # the second row starts under the first


def test_highlighted_steps_are_coloured_and_named_in_the_title():
    fig = dataflow_figure(highlight=("mask",))
    assert parts(fig).highlighted == ("mask",)
    assert parts(fig).step_boxes["mask"].get_facecolor() == to_rgba(HIGHLIGHT_FACE)
    for step in DATAFLOW_STEPS:
        if step != "mask":
            assert parts(fig).step_boxes[step].get_facecolor() == to_rgba(PLAIN_FACE), step
    title = parts(fig).title_text.get_text()
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
    assert parts(fig).title_text.get_text().splitlines()[-1] == expected
    named = (highlight,) if isinstance(highlight, str) else highlight
    assert set(parts(fig).highlighted) == set(named)


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


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_no_text_is_under_11_pt_when_shown_850_px_wide(options):
    fig = dataflow_figure(highlight=("mask",), **options)
    assert fig.get_figwidth() * SCREEN_DPI == SHOWN_WIDTH_PX  # drawn at the size it is shown
    texts = visible_texts(fig)
    notes = 1 if options.get("heads") or options.get("cache") else 0  # what d_h, T_k are
    routes = 2 if options.get("cache") else 0  # the labels "Q: not cached" and "K, V"
    # name and detail per box, the title
    assert len(texts) == 2 * len(parts(fig).steps) + 1 + notes + routes
    scale = SHOWN_WIDTH_PX / (fig.get_figwidth() * SCREEN_DPI)
    sizes = {text.get_text(): text.get_fontsize() * scale for text in texts}
    smallest = min(sizes, key=sizes.get)
    assert sizes[smallest] >= 11, f"{smallest!r} is shown at {sizes[smallest]:.1f} pt"


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_every_text_fits_inside_its_box_and_the_figure(options):
    for highlight in ((), ("mask",), steps_of(options)):
        fig = dataflow_figure(highlight=highlight, **options)
        renderer = drawn(fig)
        figure_box = fig.bbox
        for step, texts in parts(fig).step_texts.items():
            box = parts(fig).step_boxes[step].get_window_extent(renderer)
            for text in texts:
                extent = text.get_window_extent(renderer)
                assert box.x0 < extent.x0 and extent.x1 < box.x1, (step, text.get_text())
                assert box.y0 < extent.y0 and extent.y1 < box.y1, (step, text.get_text())
        boxes = [b.get_window_extent(renderer) for b in parts(fig).step_boxes.values()]
        assert all(figure_box.x0 <= b.x0 and b.x1 <= figure_box.x1 for b in boxes)
        title = parts(fig).title_text.get_window_extent(renderer)
        assert figure_box.x0 <= title.x0 and title.x1 <= figure_box.x1, title
        assert title.y1 <= figure_box.y1
        assert title.y0 > max(b.y1 for b in boxes)  # the title overlaps no box
        if parts(fig).note_text is not None:
            note = parts(fig).note_text.get_window_extent(renderer)
            assert figure_box.y0 <= note.y0 and note.x1 <= figure_box.x1
            assert note.y1 < min(b.y0 for b in boxes)  # under every box


def test_highlighted_text_contrasts_with_its_box():
    fig = dataflow_figure(highlight=("softmax",))
    name, detail = parts(fig).step_texts["softmax"]
    assert to_rgba(name.get_color()) != to_rgba(HIGHLIGHT_FACE)
    assert name.get_color() == detail.get_color() == "white"
    assert parts(fig).step_texts["mask"][0].get_color() != "white"  # dark text on the light boxes


# --- the options: batched, heads, mask_label -------------------------------------------


def test_the_valid_names_per_option_can_be_read():
    assert dataflow_steps() == dataflow_steps(heads=False) == DATAFLOW_STEPS
    assert dataflow_steps(heads=True) == MULTI_HEAD_STEPS
    # heads=True adds split after the projections, merge and out_proj before the context
    assert [step for step in MULTI_HEAD_STEPS if step in DATAFLOW_STEPS] == list(DATAFLOW_STEPS)
    assert MULTI_HEAD_STEPS[1:3] == ("projections", "split")
    assert MULTI_HEAD_STEPS[-4:] == ("weighted_sum", "merge", "out_proj", "context")


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_each_option_draws_its_steps_in_order_row_by_row(options):
    fig = dataflow_figure(**options)
    steps = steps_of(options)
    assert parts(fig).steps == steps
    assert list(parts(fig).step_boxes) == list(parts(fig).step_texts) == list(steps)
    boxes = [parts(fig).step_boxes[step].get_bbox() for step in steps]
    rows = []  # consecutive boxes at the same height form a row
    for box in boxes:
        if rows and box.y0 == pytest.approx(rows[-1][-1].y0):
            rows[-1].append(box)
        else:
            rows.append([box])
    for row in rows:
        assert all(a.x1 < b.x0 for a, b in pairwise(row))  # left to right
        assert row[0].x0 == pytest.approx(rows[0][0].x0)  # every row starts under the first
    for upper, lower in pairwise(rows):
        assert min(b.y0 for b in upper) > max(b.y1 for b in lower)  # top to bottom
    assert max(len(row) for row in rows) <= 5


@pytest.mark.parametrize("options, rows, size_px", [
    ({}, (5, 4), (850, 310)),  # the notebooks' stored outputs print this size
    ({"batched": True}, (5, 4), (850, 310)),
    ({"batched": True, "heads": True}, (4, 4, 4), (850, 490)),
    ({"batched": True, "mask_label": PADDING_LABEL}, (3, 3, 3), (850, 454)),
    ({"cache": True}, (3, 3, 3), (850, 490)),  # notebook 09; a line under the boxes
], ids=["default", "batched", "heads", "label", "cache"])
def test_the_layout_makes_room_for_more_or_wider_boxes(options, rows, size_px):
    fig = dataflow_figure(**options)
    heights = [parts(fig).step_boxes[step].get_bbox().y0 for step in parts(fig).steps]
    counts = [heights.count(y) for y in sorted(set(heights), reverse=True)]
    assert tuple(counts) == rows
    assert tuple(round(inches * SCREEN_DPI) for inches in fig.get_size_inches()) == size_px


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("heads", [False, True])
def test_the_shapes_follow_the_options(batched, heads):
    fig = dataflow_figure(batched=batched, heads=heads)
    detail = {step: texts[1].get_text() for step, texts in parts(fig).step_texts.items()}
    batch = "B × " if batched else ""
    assert detail["input"] == f"x: {batch}T × d_in"
    assert detail["scores"] == f"Q Kᵀ: {batch}{'H × ' if heads else ''}T × T"
    assert detail["context"] == f"{batch}T × d_out"
    assert detail["scale"] == ("÷ √d_h" if heads else "÷ √d_k")  # a head's keys have d_h
    if heads:
        assert detail["split"] == f"{batch}H × T × d_h"
        assert detail["merge"] == f"{batch}T × d_out"
        assert "W_o" in detail["out_proj"]
        assert parts(fig).note_text.get_text() == "H heads of d_h = d_out / H features each"
    else:
        assert parts(fig).note_text is None
        assert not {"split", "merge", "out_proj"} & set(detail)


@pytest.mark.parametrize("batched, heads, first_line", [
    (False, False, "Causal self-attention, step by step"),
    (True, False, "Causal self-attention on a batch, step by step"),
    (False, True, "Multi-head causal self-attention, step by step"),
    (True, True, "Multi-head causal self-attention on a batch, step by step"),
])
def test_the_title_says_what_is_drawn(batched, heads, first_line):
    fig = dataflow_figure(highlight="mask", batched=batched, heads=heads)
    assert parts(fig).title_text.get_text().splitlines() == [first_line, "Highlighted: causal mask"]


def test_the_multi_head_steps_can_be_highlighted_with_heads():
    fig = dataflow_figure(highlight=("out_proj", "split", "merge"), batched=True, heads=True)
    assert parts(fig).highlighted == ("split", "merge", "out_proj")  # coloured, in order
    assert parts(fig).title_text.get_text().endswith(
        "Highlighted: split heads, merge heads and out_proj")


@pytest.mark.parametrize("name", ["split", "merge", "out_proj"])
def test_a_multi_head_step_without_heads_is_refused_with_the_valid_names(name):
    with pytest.raises(ValueError) as raised:
        dataflow_figure(highlight=("mask", name), batched=True)
    message = str(raised.value)
    assert "highlight" in message and repr(name) in message
    assert "pass heads=True" in message
    assert "batched=True, heads=False" in message
    assert ", ".join(DATAFLOW_STEPS) in message


def test_an_unknown_name_with_heads_lists_the_multi_head_names():
    with pytest.raises(ValueError) as raised:
        dataflow_figure(highlight=("heads",), heads=True)
    message = str(raised.value)
    assert "'heads'" in message and "pass heads=True" not in message
    assert ", ".join(MULTI_HEAD_STEPS) in message


@pytest.mark.parametrize("argument", ["batched", "heads"])
@pytest.mark.parametrize("value", [1, "yes", None])
def test_a_flag_that_is_not_a_bool_is_named(argument, value):
    with pytest.raises(TypeError, match=rf"{argument} must be True or False, got {value!r}"):
        dataflow_figure(**{argument: value})


def test_mask_label_replaces_the_mask_box_and_names_it_in_the_title():
    fig = dataflow_figure(highlight=("mask", "softmax"), batched=True, mask_label=PADDING_LABEL)
    name, detail = parts(fig).step_texts["mask"]
    assert (name.get_text(), detail.get_text()) == PADDING_LABEL
    assert parts(fig).title_text.get_text().endswith(
        "Highlighted: causal & padding mask and softmax")
    default = parts(dataflow_figure(mask_label=None)).step_texts["mask"]
    assert tuple(text.get_text() for text in default) == ("causal mask", "future → −∞")


@pytest.mark.parametrize("mask_label, error, words", [
    ("padding mask", TypeError, "must be a pair (name, detail), got str"),
    (3, TypeError, "must be a pair (name, detail), got int"),
    (("padding mask",), ValueError, "got ('padding mask',)"),
    (("a", "b", "c"), ValueError, "got ('a', 'b', 'c')"),
    (("padding mask", 0), ValueError, "got ('padding mask', 0)"),
    (("padding mask", "  "), ValueError, "got '  ' (2 characters)"),
    (("padding mask", "x" * (MASK_LABEL_CHARS + 1)), ValueError,
     f"({MASK_LABEL_CHARS + 1} characters)"),
    (("padding\nmask", "hidden"), ValueError, "got 'padding\\nmask'"),
])
def test_a_malformed_mask_label_is_named_with_what_is_expected(mask_label, error, words):
    with pytest.raises(error) as raised:
        dataflow_figure(mask_label=mask_label)
    message = str(raised.value)
    assert message.startswith("mask_label ")
    assert words in message
    assert f"each 1 to {MASK_LABEL_CHARS} characters on one line" in message


def test_a_mask_label_of_the_longest_length_fits_its_box_unless_its_letters_are_wide():
    longest = ("causal and padding masks", "future and padded keys →")
    assert {len(line) for line in longest} == {MASK_LABEL_CHARS}
    fig = dataflow_figure(mask_label=longest, batched=True, heads=True)
    renderer = drawn(fig)
    box = parts(fig).step_boxes["mask"].get_window_extent(renderer)
    for text in parts(fig).step_texts["mask"]:
        extent = text.get_window_extent(renderer)
        assert box.x0 < extent.x0 and extent.x1 < box.x1
    assert all(box.get_window_extent(renderer).x1 <= fig.bbox.x1
               for box in parts(fig).step_boxes.values())
    with pytest.raises(ValueError, match=r"mask_label got \('W+', 'wide'\), a line .* inches "
                                         r"wide as drawn; expected at most .* shorten it"):
        dataflow_figure(mask_label=("W" * MASK_LABEL_CHARS, "wide"))


def test_no_argument_is_modified():
    highlight, mask_label = ["merge", "split"], ["padding mask", "padded keys → −∞"]
    fig = dataflow_figure(highlight=highlight, heads=True, mask_label=mask_label)
    assert highlight == ["merge", "split"]
    assert mask_label == ["padding mask", "padded keys → −∞"]
    assert parts(fig).highlighted == ("split", "merge")
    assert DATAFLOW_STEPS[2] == "scores" and len(DATAFLOW_STEPS) == 9  # the constants too
    assert len(MULTI_HEAD_STEPS) == 12


# --- cache=True: one step of generation with a KV cache (notebook 09) -------------------


@pytest.mark.parametrize("heads", [False, True])
def test_the_cache_is_a_step_after_the_projections_and_any_split(heads):
    steps = dataflow_steps(heads=heads, cache=True)
    plain = dataflow_steps(heads=heads)
    # generation runs in eval mode: no dropout step
    assert [step for step in steps if step != CACHE_STEP] == [s for s in plain if s != "dropout"]
    assert "dropout" in plain and "dropout" not in steps
    before = "split" if heads else "projections"
    assert steps[steps.index(before) + 1] == CACHE_STEP
    assert CACHE_STEP not in plain  # notebooks 01-08 draw no cache


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("heads", [False, True])
def test_with_a_cache_new_queries_meet_every_key_so_far(batched, heads):
    fig = dataflow_figure(highlight=("cache", "mask"), batched=batched, heads=heads,
                          cache=True)
    texts = {step: tuple(text.get_text() for text in pair)
             for step, pair in parts(fig).step_texts.items()}
    batch = "B × " if batched else ""
    assert texts["cache"] == ("KV cache", "earlier K, V + new")
    assert texts["input"][1] == f"x: {batch}T_new × d_in"
    assert texts["scores"][1] == f"Q Kᵀ: {batch}{'H × ' if heads else ''}T_new × T_k"
    assert texts["context"][1] == f"{batch}T_new × d_out"
    assert texts["mask"] == ("causal mask", "aligned bottom-right")
    assert "T × T" not in " ".join(" ".join(pair) for pair in texts.values())
    assert parts(fig).title_text.get_text().splitlines() == [
        f"{'Multi-head causal' if heads else 'Causal'} self-attention"
        f"{' on a batch' if batched else ''} with a KV cache, one step of generation",
        "Highlighted: KV cache and causal mask"]
    notes = parts(fig).note_text.get_text().splitlines()
    assert notes[-1] == "KV cache: the keys and values of earlier tokens; T_k = cached + T_new"
    assert len(notes) == (2 if heads else 1)  # and the line defining d_h
    assert layout_problems(fig) == []


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("heads", [False, True])
def test_with_a_cache_the_queries_go_past_it_to_the_scores(batched, heads):
    fig = dataflow_figure(batched=batched, heads=heads, cache=True)
    renderer = drawn(fig)
    [query] = fig.findobj(lambda artist: artist.get_gid() == "query_route")
    [key_value] = fig.findobj(lambda artist: artist.get_gid() == "key_value_route")
    assert (query.get_text(), key_value.get_text()) == (QUERY_ROUTE, KEY_VALUE_ROUTE)
    boxes = {step: box.get_window_extent(renderer)
             for step, box in parts(fig).step_boxes.items()}
    label = query.get_window_extent(renderer)
    # the queries' label lies between the rows, under the step before the cache or over
    # the scores, never on the cache's own route
    assert not any(label.overlaps(box) for box in boxes.values())
    assert not label.overlaps(key_value.get_window_extent(renderer))
    before = boxes["split" if heads else "projections"]
    assert before.x0 <= label.x0 <= before.x1 or boxes["scores"].x0 <= label.x0 <= boxes[
        "scores"].x1


def test_the_cache_picture_is_described_in_words():
    fig = dataflow_figure(highlight=("cache", "mask"), cache=True)
    description = figure_description(fig)
    assert description.startswith("Causal self-attention with a KV cache, one step of "
                                  "generation. Highlighted: KV cache and causal mask.")
    assert ("projections W_q, W_k, W_v → KV cache earlier K, V + new → scores Q Kᵀ: "
            "T_new × T_k") in description
    assert "dropout" not in description
    assert "The queries go past the cache, straight to the scores." in description
    assert description.endswith("T_k = cached + T_new.")
    # Without the cache, the description is what notebooks 01-08 store as alt text.
    assert figure_description(dataflow_figure(highlight="mask")).endswith(
        "→ context T × d_out.")


def test_the_cache_step_without_cache_is_refused_with_the_valid_names():
    with pytest.raises(ValueError) as raised:
        dataflow_figure(highlight=("cache",))
    message = str(raised.value)
    assert "'cache'" in message and "pass cache=True" in message
    assert "batched=False, heads=False, cache=False" in message
    with pytest.raises(TypeError, match="cache must be True or False, got 'yes'"):
        dataflow_figure(cache="yes")
