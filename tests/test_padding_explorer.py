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
    padded_causal_weights,
    padding_mask,
)
from helpers.data import TOKENS
from helpers.plotting import NAN_COLOUR
from helpers.widgets import padded_example_embeddings, padded_example_ids, padding_explorer


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


# ---------------------------------------------------------------- the explorer


def weight_artist(explorer):
    return explorer.figure.axes[3].collections[0]


def test_starts_with_nan_rows_drawn_in_orange():
    explorer = padding_explorer()
    assert explorer.last_error is None
    overlay = explorer.figure.axes[3].collections[1].get_array()  # (T, T, 4) colours
    orange = np.all(np.isclose(overlay, to_rgba(NAN_COLOUR)), axis=-1)  # (T, T)
    # sequence 1 is shown: "one step" after 4 pads, left padding: 4 rows with no key
    assert orange[:4].all() and not orange[4:].any()


def test_heatmap_shows_the_model_and_updates_in_place():
    explorer = padding_explorer(seed=123)
    artist = weight_artist(explorer)
    n_axes = len(explorer.figure.axes)
    for name, value in [("side", "right"), ("fully_masked", "zeros"), ("length_1", 4),
                        ("shown", 2)]:
        explorer.controls[name].value = value
        assert explorer.last_error is None
    ids = padded_example_ids([6, 4, 3], 6, side="right")
    torch.manual_seed(123)
    module = CausalAttention(3, 2, context_length=6)
    x = padded_example_embeddings(ids)
    with torch.no_grad():
        scores = attention_scores(module.W_query(x), module.W_key(x))
    _, weights = padded_causal_weights(scores, ids != 0, fully_masked="zeros")
    np.testing.assert_allclose(weight_artist(explorer).get_array(), weights[2].numpy(), rtol=1e-6)
    assert weight_artist(explorer) is artist and len(explorer.figure.axes) == n_axes


def test_new_token_labels_do_not_redraw_the_whole_figure():
    explorer = padding_explorer()
    for name in explorer.controls:  # each control once: the renderer learns what changes
        explorer.step(name)
    draws = explorer.renderer.full_draws
    for name, value in [("side", "right"), ("shown", 0), ("side", "left"), ("shown", 2)]:
        explorer.controls[name].value = value
    assert explorer.renderer.full_draws == draws
    values = explorer.values()
    ids = padded_example_ids([values[f"length_{b}"] for b in range(3)], 6, side="left")[2]
    expected = [f"{j}:{TOKENS[i - 1] if i else 'pad'}" for j, i in enumerate(ids.tolist())]
    assert "pad" in expected[0] and "pad" not in expected[-1]  # the labels did change
    combined_ax = explorer.figure.axes[2]
    assert [text.get_text() for text in combined_ax.texts[-6:]] == expected


def test_every_control_changes_the_picture():
    explorer = padding_explorer()
    for name, value in [("length_0", 3), ("length_1", 5), ("length_2", 0), ("side", "right"),
                        ("masked", "queries"), ("fully_masked", "uniform"), ("shown", 0)]:
        before = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.last_error is None, explorer.last_error
        assert explorer.image.value != before, f"changing {name} left the image as it was"


def test_zero_rows_are_written_as_zeros_and_not_as_nan():
    explorer = padding_explorer()
    explorer.controls["fully_masked"].value = "zeros"
    texts = [text.get_text() for text in explorer.figure.axes[3].texts]
    assert "NaN" not in texts and texts[:24] == ["0"] * 24  # 4 empty rows of 6
    assert "→ 0" in explorer.figure.axes[3].get_title()


def test_caption_reports_what_the_batch_does():
    explorer = padding_explorer()
    assert "7 NaN rows" in explorer.figure._suptitle.get_text()
    explorer.controls["masked"].value = "queries"
    assert "real tokens give weight to padding" in explorer.figure._suptitle.get_text()
    explorer.controls["side"].value = "right"
    explorer.controls["fully_masked"].value = "zeros"
    caption = explorer.figure._suptitle.get_text()
    assert "no real token gives weight to padding" in caption and "no NaN" in caption
