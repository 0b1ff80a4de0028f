"""Notebook 06: the padding choices the explorer draws (a pure function), and the explorer
driven headlessly (set a control, inspect the figure)."""

import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba

from helpers.attention import (
    CausalAttention,
    attention_scores,
    attention_weights,
    causal_padding_attn_mask,
    padding_mask,
)
from helpers.attention.demos import padded_causal_weights
from helpers.data import TOKENS, padded_example_embeddings, padded_example_ids
from helpers.plotting import NAN_COLOUR
from helpers.widgets.padding import padding_explorer, padding_view
from tests.figures import layout_problems


def scores_and_mask(lengths, side, seed=0):
    generator = torch.Generator().manual_seed(seed)
    is_token = padding_mask(lengths, 5, side=side)
    return torch.randn(len(lengths), 5, 5, generator=generator), is_token


@pytest.mark.parametrize("side", ["right", "left"])
def test_keys_and_zeros_is_the_helpers_attention(side):
    scores, is_token = scores_and_mask([5, 2, 0], side)
    allowed, weights = padded_causal_weights(scores, is_token, masked="keys", fully_masked="zeros")
    expected_mask = causal_padding_attn_mask(is_token)[:, 0]  # (B, T, T)
    assert torch.equal(allowed, expected_mask)
    # attention_weights scales the scores; undo that by passing scale=1 on keys = identity
    reference = attention_weights(scores, torch.eye(5), attn_mask=expected_mask, scale=1.0)
    torch.testing.assert_close(weights, reference)


def test_nan_uniform_and_zeros_differ_only_in_the_rows_without_a_key():
    scores, is_token = scores_and_mask([5, 2, 3], "left")
    allowed, zeros = padded_causal_weights(scores, is_token, fully_masked="zeros")
    _, nan = padded_causal_weights(scores, is_token, fully_masked="nan")
    _, uniform = padded_causal_weights(scores, is_token, fully_masked="uniform")
    no_key = ~allowed.any(dim=-1)  # (B, T)
    assert no_key.sum() == 5  # 3 padded queries in sequence 1, 2 in sequence 2
    assert torch.isnan(nan[no_key]).all() and not torch.isnan(nan[~no_key]).any()
    assert (zeros[no_key] == 0).all()
    torch.testing.assert_close(uniform[no_key], torch.full((5, 5), 0.2))
    torch.testing.assert_close(nan[~no_key], zeros[~no_key])
    torch.testing.assert_close(uniform[~no_key], zeros[~no_key])


def test_masking_query_rows_lets_real_tokens_read_padding_after_left_padding():
    scores, is_token = scores_and_mask([5, 2], "left")
    allowed, weights = padded_causal_weights(scores, is_token, masked="queries")
    on_padding = weights * ~is_token[:, None, :]  # (B, T, T)
    assert on_padding[is_token].sum() > 0.1
    assert not allowed[~is_token].any()  # every padded query row is empty


@pytest.mark.parametrize("kwargs, words", [
    ({"masked": "columns"}, ["masked", "columns"]),
    ({"fully_masked": "ones"}, ["fully_masked", "ones"]),
])
def test_bad_choices_are_named(kwargs, words):
    scores, is_token = scores_and_mask([5, 2], "left")
    with pytest.raises(ValueError) as raised:
        padded_causal_weights(scores, is_token, **kwargs)
    assert all(word in str(raised.value) for word in words)


def test_example_ids_place_the_tokens_and_the_padding():
    ids = padded_example_ids([6, 2, 3], 6, side="left")
    assert ids.tolist() == [[1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 5, 6], [0, 0, 0, 3, 4, 5]]
    assert padded_example_ids([1, 0, 6], 6).tolist()[1] == [0] * 6
    x = padded_example_embeddings(ids)
    assert x.shape == (3, 6, 3) and (x[ids == 0] == 0).all()
    assert [TOKENS[i - 1] for i in ids[1, 4:].tolist()] == ["one", "step"]


# ---------------------------------------------------------------- the view, without a figure


def reference(lengths, side, masked, fully_masked, seed=123):
    """ids (B, T), allowed and weights (B, T, T), as the notebook would compute them."""
    ids = padded_example_ids(lengths, 6, side=side)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = CausalAttention(3, 2, context_length=6)
    x = padded_example_embeddings(ids)
    with torch.no_grad():
        scores = attention_scores(module.W_query(x), module.W_key(x))
    allowed, weights = padded_causal_weights(scores, ids != 0, masked=masked,
                                             fully_masked=fully_masked)
    return ids, allowed, weights


CHOICES = [  # lengths, side, masked, fully_masked, shown
    ([6, 2, 3], "left", "keys", "nan", 1),
    ([6, 4, 3], "right", "keys", "zeros", 2),
    ([3, 5, 0], "right", "queries", "uniform", 0),
    ([1, 0, 6], "left", "queries", "zeros", 1),
]


@pytest.mark.parametrize("lengths, side, masked, fully_masked, shown", CHOICES)
def test_the_view_is_the_models_weights_for_the_sequence_shown(lengths, side, masked,
                                                                fully_masked, shown):
    view = padding_view(*lengths, side, masked, fully_masked, shown, seed=123)
    ids, allowed, weights = reference(lengths, side, masked, fully_masked)
    words = [[TOKENS[i - 1] if i else "pad" for i in row] for row in ids.tolist()]
    assert view.words.tolist() == words
    assert np.array_equal(view.is_token, (ids != 0).numpy())
    assert view.shown == shown
    assert view.token_labels == tuple(f"{j}:{word}" for j, word in enumerate(words[shown]))
    assert np.array_equal(view.allowed, allowed[shown].numpy())
    np.testing.assert_allclose(view.weights, weights[shown].numpy(), rtol=1e-6)  # NaN = NaN
    no_key = ~view.allowed.any(axis=-1)
    for i in range(6):
        cells = view.weight_text[i].tolist()
        if no_key[i] and fully_masked == "nan":
            assert cells == ["NaN"] * 6
        elif no_key[i] and fully_masked == "zeros":
            assert cells == ["0"] * 6
        elif no_key[i]:  # uniform: the row is spread evenly, and drawn as weights
            assert cells == ["0.17"] * 6 and view.weight_mask[i].all()
        else:
            assert cells == [f"{value:.2f}" if ok else ""
                             for value, ok in zip(view.weights[i], view.allowed[i], strict=True)]
            assert np.array_equal(view.weight_mask[i], view.allowed[i])
    assert view.combined_title == f"combined: causal & padded {masked}"
    n_empty = int(no_key.sum())
    if n_empty:
        assert view.weights_title.startswith(f"attention weights: {n_empty} row")
    else:
        assert view.weights_title == "attention weights: every row has a key"
    assert view.caption.startswith(f"{side} padding, {masked} masked")


def test_the_caption_reports_the_whole_batch():
    def caption(**choices):
        values = {"length_0": 6, "length_1": 2, "length_2": 3, "side": "left", "masked": "keys",
                  "fully_masked": "nan", "shown": 1} | choices
        view = padding_view(**values)
        return view.caption

    assert caption().endswith("; 7 NaN rows in the batch")  # 4 + 3 padded queries, left padding
    assert "no real token attends to padding" in caption()
    assert "real tokens attend to padding" in caption(masked="queries")
    assert caption(fully_masked="zeros").endswith("; no NaN in the batch")
    assert caption(length_1=6, length_2=5).endswith("; 1 NaN row in the batch")


# ---------------------------------------------------------------- the explorer


def tick_texts(labels):
    return [label.get_text() for label in labels]


def assert_draws_its_view(explorer):
    view, drawing = explorer.view, explorer.drawing
    assert drawing.batch_map.cell_text.tolist() == view.words.tolist()
    assert np.array_equal(drawing.batch_map.masked, ~view.is_token)  # padding greyed
    assert drawing.shown_outline.get_y() == view.shown - 0.5
    for heatmap in (drawing.combined_map, drawing.weight_map):
        assert tick_texts(heatmap.ax.get_xticklabels()) == list(view.token_labels)
        assert tick_texts(heatmap.ax.get_yticklabels()) == list(view.token_labels)
    assert np.array_equal(drawing.combined_map.masked, ~view.allowed)
    assert drawing.combined_map.cell_text.tolist() == np.where(view.allowed, "✓", "").tolist()
    np.testing.assert_allclose(drawing.weight_map.image.get_array(), np.nan_to_num(view.weights),
                               rtol=1e-6)
    assert np.array_equal(drawing.weight_map.nan, np.isnan(view.weights))
    assert drawing.weight_map.cell_text.tolist() == view.weight_text.tolist()
    assert drawing.combined_map.ax.get_title() == view.combined_title
    assert drawing.weight_map.ax.get_title() == view.weights_title
    assert explorer.figure.get_suptitle() == view.caption
    assert drawing.batch_map.ax.get_title() == "padding mask (B, T)"


def test_starts_with_nan_rows_drawn_in_orange():
    explorer = padding_explorer()
    assert explorer.last_error is None
    overlay = explorer.drawing.weight_map.overlay.get_array()  # (T, T, 4) colours
    orange = np.all(np.isclose(overlay, to_rgba(NAN_COLOUR)), axis=-1)  # (T, T)
    # sequence 1 is shown: "one step" after 4 pads, left padding: 4 rows with no key
    assert orange[:4].all() and not orange[4:].any()
    assert_draws_its_view(explorer)


def test_heatmaps_show_the_view_and_update_in_place():
    explorer = padding_explorer(seed=123)
    artists = [explorer.drawing.weight_map.image, explorer.drawing.combined_map.image]
    n_axes = len(explorer.figure.axes)
    for name, value in [("side", "right"), ("fully_masked", "zeros"), ("length_1", 4),
                        ("shown", 2), ("masked", "queries"), ("fully_masked", "uniform")]:
        explorer.controls[name].value = value
        assert explorer.last_error is None
        assert_draws_its_view(explorer)
    _, _, weights = reference([6, 4, 3], "right", "queries", "uniform")
    np.testing.assert_allclose(explorer.view.weights, weights[2].numpy(), rtol=1e-6)
    assert [explorer.drawing.weight_map.image, explorer.drawing.combined_map.image] == artists
    assert len(explorer.figure.axes) == n_axes


def test_token_labels_are_right_after_every_change():
    explorer = padding_explorer()
    for name, value in [("side", "right"), ("shown", 0), ("side", "left"), ("shown", 2),
                        ("length_2", 5), ("length_2", 0), ("shown", 1), ("length_1", 6)]:
        explorer.controls[name].value = value
        values = explorer.values()
        lengths = [values[f"length_{b}"] for b in range(3)]
        ids = padded_example_ids(lengths, 6, side=values["side"])[values["shown"]]
        expected = [f"{j}:{TOKENS[i - 1] if i else 'pad'}" for j, i in enumerate(ids.tolist())]
        for ax in (explorer.drawing.combined_map.ax, explorer.drawing.weight_map.ax):
            assert tick_texts(ax.get_xticklabels()) == expected, (name, value)
            assert tick_texts(ax.get_yticklabels()) == expected, (name, value)
        assert_draws_its_view(explorer)


def test_every_label_fits_beside_its_panel():
    """The layout is made once: the widest token labels and titles the controls can bring
    must still fit, each text clear of the other panels, of their texts, of the colour bar
    and of the legend, and inside the figure."""
    explorer = padding_explorer()
    figure = explorer.figure
    for choices in [{}, {"side": "right", "shown": 0}, {"side": "left", "length_0": 5},
                    {"masked": "queries", "fully_masked": "uniform"},
                    {"side": "right", "masked": "queries", "fully_masked": "nan"},
                    {"length_0": 0, "shown": 0}, {"side": "right", "length_2": 6, "shown": 2}]:
        for name, value in choices.items():
            explorer.controls[name].value = value
        assert layout_problems(figure) == [], choices


def test_zero_rows_are_written_as_zeros_and_not_as_nan():
    explorer = padding_explorer()
    explorer.controls["fully_masked"].value = "zeros"
    cell_text = explorer.drawing.weight_map.cell_text  # (T, T)
    assert "NaN" not in cell_text and cell_text[:4].tolist() == [["0"] * 6] * 4  # 4 empty rows
    assert "→ 0" in explorer.drawing.weight_map.ax.get_title()


def test_caption_reports_what_the_batch_does():
    explorer = padding_explorer()
    assert "7 NaN rows" in explorer.figure.get_suptitle()
    explorer.controls["masked"].value = "queries"
    assert "real tokens attend to padding" in explorer.figure.get_suptitle()
    explorer.controls["side"].value = "right"
    explorer.controls["fully_masked"].value = "zeros"
    assert "no real token attends to padding" in explorer.figure.get_suptitle()
    assert "no NaN" in explorer.figure.get_suptitle()


def test_the_batch_panels_words_are_readable_and_fit_their_cells():
    """The token words of the batch panel are drawn as large as the tick labels around them
    and the caption larger, and the widest word leaves room on both sides of its cell."""
    from helpers.plotting import centred_text_path

    explorer = padding_explorer()
    drawing, figure = explorer.drawing, explorer.figure
    batch_ax = drawing.batch_map.ax
    tick_size = batch_ax.get_yticklabels()[0].get_fontsize()
    assert drawing.batch_map.cell_labels.fontsize >= tick_size
    assert drawing.caption.get_fontsize() > tick_size
    figure.canvas.draw()
    cell_width = batch_ax.get_window_extent().width / len(TOKENS) * 72 / figure.dpi  # points
    size = drawing.batch_map.cell_labels.fontsize
    widest = max(centred_text_path(token, size).get_extents().width for token in TOKENS)
    assert widest < 0.95 * cell_width, (widest, cell_width)
