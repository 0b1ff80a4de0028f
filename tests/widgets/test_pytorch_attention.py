"""Notebook 07: what F.scaled_dot_product_attention computes for the mask handed to it (a
pure function, checked against PyTorch and against a softmax written out here), and the
explorer driven headlessly (set every control, inspect the figure)."""

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.attention import attention_weights, causal_mask, scaled_dot_product_attention
from helpers.data import TOKENS, example_self_attention, padded_example_embeddings
from helpers.widgets.causal_masking import OUTSIDE_COLOUR
from helpers.widgets.pytorch_attention import (
    COMPUTED_TITLE,
    MEANT_TITLE,
    PADDINGS,
    PASSED_MASKS,
    PASSED_TEXTS,
    SHOWN_DIFFERENCE,
    passed_mask,
    pytorch_attention_explorer,
    pytorch_attention_view,
)
from tests.figures import layout_problems
from tools.explorer_step import step
from tools.full_draws import count_full_draws

T = len(TOKENS)
SETTINGS = list(itertools.product(PASSED_MASKS, PADDINGS, range(1, T + 1)))


def sequence(padding):
    """The explorer's sequence, written out: token ids (T,), 0 at the two pads."""
    ids = list(range(1, T + 1))
    if padding == "right":
        return torch.tensor(ids[:T - 2] + [0, 0])
    if padding == "left":
        return torch.tensor([0, 0] + ids[:T - 2])
    return torch.tensor(ids)


def reference(passed, padding, T_q, seed=789):
    """(meant, computed), (T_q, T) each: the weights meant, by a softmax written out here,
    and the weights F.scaled_dot_product_attention computes with the mask passed."""
    ids = sequence(padding)
    module = example_self_attention(seed)
    x = padded_example_embeddings(ids[None])  # (1, T, 3)
    with torch.no_grad():
        q, k = module.W_query(x)[0, T - T_q:], module.W_key(x)[0]  # (T_q, d), (T, d)
    scores = q @ k.T / math.sqrt(q.shape[-1])  # (T_q, T)
    rows = torch.arange(T - T_q, T)[:, None]  # the queries' positions
    allowed = (torch.arange(T)[None, :] <= rows) & (ids != 0)  # bottom-right, real keys
    meant = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    meant = torch.nan_to_num(meant, nan=0.0)  # rows with no key: 0, as PyTorch gives
    eye = torch.eye(T)
    with torch.no_grad():
        if passed == "is_causal":
            computed = F.scaled_dot_product_attention(q, k, eye, is_causal=True)
        else:
            mask = {"allowed": allowed, "blocked": ~allowed, "float01": allowed.float(),
                    "additive": torch.where(allowed, 0.0, float("-inf"))}[passed]
            computed = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    return meant, computed, allowed


@pytest.mark.parametrize("passed, padding, T_q", SETTINGS)
def test_the_view_is_what_pytorch_computes_and_what_was_meant(passed, padding, T_q):
    view = pytorch_attention_view(passed, padding, T_q)
    meant, computed, allowed = reference(passed, padding, T_q)
    queries = slice(T - T_q, None)
    np.testing.assert_allclose(view.meant[queries], meant.numpy(), atol=1e-6)
    np.testing.assert_allclose(view.computed[queries], computed.numpy(), atol=1e-6)
    assert np.array_equal(view.allowed[queries], allowed.numpy())
    assert not view.allowed[:T - T_q].any() and not view.computed[:T - T_q].any()
    assert view.is_query.tolist() == [i >= T - T_q for i in range(T)]
    assert np.array_equal(view.computed_shown, (view.computed != 0) & view.is_query[:, None])
    difference = np.abs(view.computed - view.meant)
    assert view.largest == pytest.approx(difference.max(), abs=1e-7)
    assert difference[view.largest_at] == pytest.approx(view.largest, abs=1e-7)
    words = [TOKENS[i - 1] if i else "pad" for i in sequence(padding).tolist()]
    assert view.token_labels == tuple(f"{j}:{word}" for j, word in enumerate(words))
    lines = view.caption.split("\n")
    assert len(lines) == 3 and lines[0] == f"you pass: {PASSED_TEXTS[passed]}"
    if view.largest >= SHOWN_DIFFERENCE:
        row, column = view.largest_at
        assert lines[2] == (f"largest difference from what you meant: {view.largest:.2f}, "
                            f"query {view.token_labels[row]}, key {view.token_labels[column]}")
    else:
        assert lines[2].endswith("the same weights")


@pytest.mark.parametrize("passed, padding, T_q", SETTINGS)
def test_sdpa_computes_what_was_meant_exactly_when_the_mask_says_it(passed, padding, T_q):
    """The right masks give the weights meant; the wrong ones differ visibly, but where
    their slip changes nothing (a float 0/1 mask when nothing is blocked, is_causal=True
    with as many queries as keys and no padding)."""
    view = pytorch_attention_view(passed, padding, T_q)
    nothing_blocked = bool(view.allowed[view.is_query].all())
    same = (passed in ("allowed", "additive")
            or (passed == "float01" and nothing_blocked)
            or (passed == "is_causal" and T_q == T and padding == "none"))
    if same:
        assert view.largest < 1e-6, view.caption
    else:
        assert view.largest >= SHOWN_DIFFERENCE, view.caption


@pytest.mark.parametrize("passed", list(PASSED_MASKS))
def test_the_masks_handed_over_mean_what_helpers_attention_says(passed):
    """The mask each choice hands over, read by the helpers (PyTorch's semantics): the
    weights SDPA computed."""
    generator = torch.Generator().manual_seed(7)
    q, k = torch.randn(3, 2, generator=generator), torch.randn(T, 2, generator=generator)
    allowed = causal_mask(T)[T - 3:] & torch.tensor([False, True, True, True, True, True])
    attn_mask, is_causal = passed_mask(allowed, passed)
    expected = attention_weights(q, k, attn_mask=attn_mask, is_causal=is_causal)
    with torch.no_grad():
        computed = F.scaled_dot_product_attention(q, k, torch.eye(T), attn_mask=attn_mask,
                                                  is_causal=is_causal)
    torch.testing.assert_close(computed, expected)
    if passed in ("blocked", "float01", "additive"):
        assert attn_mask.dtype == (torch.bool if passed == "blocked" else torch.float32)


def test_identity_values_make_the_output_the_weights():
    """The trick the explorer states: weights @ I = weights."""
    generator = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 4, 2, generator=generator), torch.randn(1, T, 2, generator=generator)
    mask = causal_mask(T)[T - 4:]
    _, weights = scaled_dot_product_attention(q, k, torch.randn(1, T, 5), attn_mask=mask)
    output = F.scaled_dot_product_attention(q, k, torch.eye(T)[None], attn_mask=mask)
    torch.testing.assert_close(output, weights)


def test_rows_with_no_key_are_zeros_in_both_panels():
    """Left padding: the two padded queries have no allowed key; SDPA (2.5 and later) and
    the helpers give them zeros, not NaN."""
    for passed in ("allowed", "additive"):
        view = pytorch_attention_view(passed, "left", T)
        assert (view.meant[:2] == 0).all() and (view.computed[:2] == 0).all()
        assert not np.isnan(view.computed).any()


@pytest.mark.parametrize("kwargs, words", [
    ({"passed": "float", "padding": "none", "T_q": 6}, ["passed", "float"]),
    ({"passed": "allowed", "padding": "both", "T_q": 6}, ["padding", "both"]),
    ({"passed": "allowed", "padding": "none", "T_q": 0}, ["T_q", "0"]),
    ({"passed": "allowed", "padding": "none", "T_q": 7}, ["T_q", "7"]),
])
def test_bad_choices_are_named(kwargs, words):
    with pytest.raises(ValueError) as raised:
        pytorch_attention_view(**kwargs)
    assert all(word in str(raised.value) for word in words)


# ---------------------------------------------------------------- the explorer


def tick_texts(labels):
    return [label.get_text() for label in labels]


def assert_draws_its_view(explorer):
    view, drawing = explorer.view, explorer.drawing
    meant, computed = drawing.meant_map, drawing.computed_map
    assert tick_texts(meant.ax.get_yticklabels()) == list(view.token_labels)
    assert tick_texts(computed.ax.get_yticklabels()) == [""] * T  # named once, on the left
    for heatmap in (meant, computed):
        assert tick_texts(heatmap.ax.get_xticklabels()) == list(view.token_labels)
    np.testing.assert_allclose(meant.image.get_array(), view.meant, rtol=1e-6)
    np.testing.assert_allclose(computed.image.get_array(), view.computed, rtol=1e-6)
    assert np.array_equal(meant.masked, ~view.allowed)
    assert np.array_equal(computed.masked, ~view.computed_shown)
    assert meant.cell_text.tolist() == view.meant_text.tolist()
    assert computed.cell_text.tolist() == view.computed_text.tolist()
    for fader in drawing.faders:
        colours = fader.get_array()  # (T, T, 4)
        assert np.allclose(colours[~view.is_query], OUTSIDE_COLOUR)
        assert (colours[view.is_query] == 0).all()
    row, column = view.largest_at
    for outline in drawing.outlines:
        assert outline.get_xy() == (column - 0.5, row - 0.5)
        assert outline.get_visible() == (view.largest >= SHOWN_DIFFERENCE)
    assert meant.ax.get_title() == MEANT_TITLE and computed.ax.get_title() == COMPUTED_TITLE
    assert explorer.figure.get_suptitle() == view.caption


def test_starts_on_the_pitfall_so_that_the_panels_differ():
    """masked_fill's mask handed to SDPA: the mistake the notebook teaches, visible at once."""
    explorer = pytorch_attention_explorer()
    assert explorer.last_error is None
    assert explorer.values() == {"passed": "blocked", "padding": "none", "T_q": T}
    assert explorer.view.largest >= SHOWN_DIFFERENCE
    assert all(outline.get_visible() for outline in explorer.drawing.outlines)
    assert_draws_its_view(explorer)


def legend_texts(explorer):
    legend = explorer.drawing.legend
    if not legend.get_visible():
        return []
    return [text.get_text() for text in legend.get_texts() if text.get_visible()]


@pytest.mark.parametrize("choices, expected", [
    ({}, ["weight 0 (masked)", "largest difference"]),
    ({"passed": "allowed"}, ["weight 0 (masked)"]),
    ({"passed": "allowed", "T_q": 3}, ["weight 0 (masked)", "not a query (T_q < T)"]),
    ({"passed": "is_causal", "T_q": 3},
     ["weight 0 (masked)", "not a query (T_q < T)", "largest difference"]),
    ({"passed": "float01", "T_q": 1}, ["not a query (T_q < T)"]),
])
def test_the_legend_names_only_what_the_picture_shows(choices, expected):
    explorer = pytorch_attention_explorer()
    for name, value in choices.items():
        explorer.controls[name].value = value
    assert explorer.last_error is None
    assert legend_texts(explorer) == expected
    view = explorer.view
    grey = ((~view.allowed[view.is_query]).any()
            or (~view.computed_shown[view.is_query]).any())
    assert ("weight 0 (masked)" in expected) == grey
    assert ("not a query (T_q < T)" in expected) == (not view.is_query.all())
    assert ("largest difference" in expected) == any(
        outline.get_visible() for outline in explorer.drawing.outlines)
    assert explorer.drawing.legend in explorer.drawing.animated
    assert list(explorer.figure.legends) == [explorer.drawing.legend]  # the old one gone


def test_the_first_values_can_be_chosen():
    explorer = pytorch_attention_explorer(passed="blocked", padding="left", T_q=3)
    assert explorer.values() == {"passed": "blocked", "padding": "left", "T_q": 3}
    assert explorer.view.largest >= SHOWN_DIFFERENCE
    assert_draws_its_view(explorer)


def test_every_control_draws_its_view_in_the_same_artists():
    explorer = pytorch_attention_explorer(passed="allowed")
    drawing = explorer.drawing
    artists = [drawing.meant_map.image, drawing.computed_map.image, *drawing.faders,
               *drawing.outlines]
    n_axes = len(explorer.figure.axes)
    moves = [("passed", "blocked"), ("padding", "left"), ("T_q", 4), ("passed", "float01"),
             ("padding", "right"), ("passed", "is_causal"), ("T_q", 2), ("padding", "none"),
             ("passed", "additive"), ("T_q", 1), ("passed", "allowed")]
    for name, value in moves:
        explorer.controls[name].value = value
        assert explorer.last_error is None, (name, value)
        assert_draws_its_view(explorer)
        values = explorer.values()
        expected = pytorch_attention_view(values["passed"], values["padding"], values["T_q"])
        np.testing.assert_array_equal(explorer.view.computed, expected.computed)
    assert [drawing.meant_map.image, drawing.computed_map.image, *drawing.faders,
            *drawing.outlines] == artists
    assert len(explorer.figure.axes) == n_axes


def test_every_step_of_every_control_changes_the_picture():
    """As the browser test moves them: each control three steps, each a new picture (the
    two right masks give the same weights, but not the same caption)."""
    explorer = pytorch_attention_explorer()
    for name in explorer.controls:
        for _ in range(len(explorer.controls[name].options) if name != "T_q" else T):
            before = bytes(explorer.image.value)
            step(explorer, name)
            assert explorer.last_error is None
            assert bytes(explorer.image.value) != before, (name, explorer.values())


def test_changing_the_mask_or_the_queries_is_blitted():
    """Only a change of padding brings new tick labels (a full draw); the mask passed and
    the number of queries change cells, outlines and the caption only."""
    explorer = pytorch_attention_explorer()
    for name in ("passed", "T_q"):
        step(explorer, name)
    full_draws = count_full_draws(explorer.renderer)
    for _ in range(3):
        for name in ("passed", "T_q"):
            step(explorer, name)
            assert explorer.last_error is None
    assert full_draws == []


def test_every_label_fits_beside_its_panel():
    """The layout is made once: the widest token labels and captions the controls can
    bring must still fit, each text clear of the other panels, of their texts, of the
    colour bar and of the legend, and inside the figure."""
    explorer = pytorch_attention_explorer()
    figure = explorer.figure
    for choices in [{}, {"passed": "blocked", "padding": "left"},
                    {"passed": "is_causal", "T_q": 2}, {"passed": "is_causal", "T_q": 5,
                                                         "padding": "right"},
                    {"passed": "additive", "padding": "left", "T_q": 6},
                    {"passed": "float01", "padding": "none", "T_q": 1}]:
        for name, value in choices.items():
            explorer.controls[name].value = value
        assert layout_problems(figure) == [], choices


def test_every_caption_fits_the_figure():
    """Every caption the controls can bring, drawn: inside the figure's width, and clear of
    the panels' titles."""
    explorer = pytorch_attention_explorer()
    figure, caption = explorer.figure, explorer.drawing.caption
    renderer = figure.canvas.get_renderer()
    titles = [ax.title.get_window_extent(renderer) for ax in figure.axes if ax.get_title()]
    for text in sorted({pytorch_attention_view(*setting).caption for setting in SETTINGS}):
        caption.set_text(text)
        box = caption.get_window_extent(renderer)
        assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1, text
        assert not any(box.overlaps(title) for title in titles), text


@pytest.mark.parametrize("T_q, words", [(1, "the last query gets the first row"),
                                        (3, "the last 3 queries get the first rows")])
def test_the_is_causal_caption_counts_its_queries_in_good_grammar(T_q, words):
    view = pytorch_attention_view("is_causal", "none", T_q)
    assert view.caption.split("\n")[1].endswith(words), view.caption
