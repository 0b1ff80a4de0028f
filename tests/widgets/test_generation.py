"""Notebook 09's generation explorer: the view as plain data, and the widget driven
headlessly (set a control, inspect the figure)."""

import functools

import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba

from helpers.gpt.data import LETTERS, encode
from helpers.gpt.generation import KVCache, forward_with_cache, generate_with_cache
from helpers.gpt.training import one_thread
from helpers.widgets.explorer import FigureExplorer
from helpers.widgets.generation import (
    CACHE_FEATURES,
    EXAMPLE_PROMPTS,
    NOT_CACHED_COLOUR,
    explorer_trace,
    generation_explorer,
    generation_view,
    untrained_model,
)
from tests.figures import assert_shows_a_full_draw
from tools.explorer_step import step


@pytest.fixture(autouse=True)
def on_one_thread():
    with one_thread():  # tiny tensors: a second thread only slows them down
        yield


@pytest.fixture(scope="module")
def model():
    return untrained_model()


def traces(model, new_tokens):
    """What the explorer gives generation_view: a prompt's trace, generated once."""
    return functools.cache(lambda prompt: explorer_trace(model, encode(prompt), new_tokens))


def keys_and_values(model, ids):
    """(2L, F, T): head 0's first features of every token's key and value, computed over
    the whole sequence at once (not step by step, as generation does)."""
    cache = KVCache()
    with torch.no_grad():
        forward_with_cache(model, ids[None], cache)
    return torch.stack([kind[layer][0, 0, :, :CACHE_FEATURES].T
                        for layer in range(len(cache.keys))
                        for kind in (cache.keys, cache.values)]).numpy()


def test_the_view_at_the_prefill_and_later_is_the_cache_and_the_newest_row(model):
    trace_of = traces(model, 6)
    first = generation_view("abcab", 1, 1, trace_of=trace_of, new_tokens=6)
    written, _ = generate_with_cache(model, encode("abcab")[None], 6)
    letters = tuple(LETTERS[i] for i in written[0].tolist())
    assert first.tokens == letters[:6] + ("",) * 5  # the prompt, and the token it writes
    assert first.cache.shape == (4, CACHE_FEATURES, 11)  # (2L, F, T_max): keys, values
    expected = keys_and_values(model, written[0, :10])  # (2L, F, 10): every token read
    np.testing.assert_allclose(first.cache[..., :5], expected[..., :5], rtol=1e-5, atol=1e-6)
    assert np.isnan(first.cache[..., 5:]).all()  # not in the cache yet
    assert first.added == (0, 5)  # the prefill adds the whole prompt
    assert first.scale >= np.abs(expected).max() and first.scale % 0.5 == 0
    assert first.keys.tolist() == [True] * 5 + [False] * 6
    with torch.no_grad():
        _, weights = model(written[:, :9], return_weights=True)  # (1, L, H, T, T)
    np.testing.assert_allclose(first.weights[:, :5], weights[0, 1, :, 4, :5].numpy(),
                               rtol=1e-5, atol=1e-6)
    assert (first.weights[:, 5:] == 0).all() and "prefill" in first.heading
    fourth = generation_view("abcab", 4, 0, trace_of=trace_of, new_tokens=6)
    np.testing.assert_allclose(fourth.cache[..., :8], expected[..., :8], rtol=1e-5, atol=1e-6)
    assert np.isnan(fourth.cache[..., 8:]).all() and fourth.added == (7, 8)  # one new column
    assert np.array_equal(fourth.cache[..., :5], first.cache[..., :5])  # cached: unchanged
    assert fourth.scale == first.scale  # one colour scale for the whole generation
    np.testing.assert_allclose(fourth.weights[:, :8], weights[0, 0, :, 7, :8].numpy(),
                               rtol=1e-5, atol=1e-6)
    assert f"writes {letters[8]!r}" in fourth.heading and "8 keys" in fourth.heading
    assert "layer 0" in fourth.caption and "8 tokens, 1 of them new" in fourth.caption
    assert f"{8 * 2 * 2 * 2 * 16 * 4:,} bytes" in fourth.caption  # T * 2 * L * H * hd * 4


@pytest.mark.parametrize("step, layer, words", [(0, 0, "step must be from 1 to 6"),
                                                (7, 0, "step must be from 1 to 6"),
                                                (2, 2, "layer must be from 0 to 1")])
def test_a_step_or_layer_out_of_range_is_explained(model, step, layer, words):
    with pytest.raises(ValueError, match=words):
        generation_view("abc", step, layer, trace_of=traces(model, 6), new_tokens=6)


def test_a_step_out_of_range_is_refused_before_any_generation_runs(model):
    asked = []
    with pytest.raises(ValueError, match="step must be from 1 to 6"):
        generation_view("abc", 7, 0, trace_of=asked.append, new_tokens=6)
    assert asked == []


def test_every_control_change_draws_the_view(model):
    explorer = generation_explorer(model)
    assert isinstance(explorer, FigureExplorer) and explorer.last_error is None
    for name, value in [("step", 5), ("layer", 0), ("prompt", EXAMPLE_PROMPTS[2])]:
        explorer.controls[name].value = value
        assert explorer.last_error is None, name
        view = explorer.view
        drawing = explorer.drawing
        colours = np.asarray(drawing.cache_cells.get_array())  # (rows, T_max, 4)
        features = colours[drawing.feature_rows].reshape(view.cache.shape + (4,))
        cached = ~np.isnan(view.cache)
        expected = drawing.cmap(drawing.norm(view.cache[cached]))
        np.testing.assert_allclose(features[cached], expected)
        assert (features[~cached] == to_rgba(NOT_CACHED_COLOUR)).all()
        others = np.setdiff1d(np.arange(len(colours)), drawing.feature_rows)
        assert (colours[others][..., 3] == 0).all()  # the letters' row and the gaps: clear
        assert drawing.norm.vmin == -view.scale and drawing.norm.vmax == view.scale
        first, stop = view.added
        assert drawing.added_box.get_x() == first - 0.5
        assert drawing.added_box.get_width() == stop - first
        np.testing.assert_allclose(drawing.heatmap.image.get_array(), view.weights)
        assert list(drawing.letters.texts[0]) == list(view.tokens)
        assert explorer.drawing.prompt_lines[0].get_xdata()[0] == view.prompt_length - 0.5
        assert_shows_a_full_draw(explorer.image.value, explorer.figure, f"after {name}")


def test_shorter_prompts_get_blank_columns_in_the_same_picture(model):
    explorer = generation_explorer(model, prompts=["abcdefgh", "ab"], new_tokens=4)
    width = len(explorer.view.tokens)
    explorer.controls["prompt"].value = "ab"
    assert explorer.last_error is None and len(explorer.view.tokens) == width == 12
    assert explorer.view.tokens[7:] == ("",) * 5 and not explorer.view.keys[2:].any()
    assert explorer.view.cache.shape[-1] == 12 and np.isnan(explorer.view.cache[..., 2:]).all()


def test_bad_arguments_are_explained(model):
    with pytest.raises(ValueError, match="context_length=64"):
        generation_explorer(model, new_tokens=60)
    with pytest.raises(ValueError, match="knows a to p"):
        generation_explorer(model, prompts=["xyz"])
    with pytest.raises(TypeError, match="TinyGPT"):
        generation_explorer(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="non-empty list of strings"):
        generation_explorer(model, prompts=[])


def test_generation_runs_once_per_prompt_and_not_before_it_is_picked(model, monkeypatch):
    import helpers.widgets.generation as module

    calls = []  # generation_trace, inside explorer_trace
    real = module.generation_trace
    monkeypatch.setattr(module, "generation_trace",
                        lambda *args: calls.append(args[1].tolist()) or real(*args))
    explorer = generation_explorer(model)
    for _ in range(3):
        step(explorer, "step")
    explorer.controls["prompt"].value = EXAMPLE_PROMPTS[1]
    explorer.controls["prompt"].value = EXAMPLE_PROMPTS[0]
    assert calls == [encode(EXAMPLE_PROMPTS[0]).tolist(), encode(EXAMPLE_PROMPTS[1]).tolist()]


def test_the_cache_shown_is_the_cache_generation_builds(model):
    """The explorer replays generation's calls (the prefill, then one token at a time) to
    show its cache: the same keys and values as the model's own at every position."""
    trace = explorer_trace(model, encode("hopho"), 6)
    written, _ = generate_with_cache(model, encode("hopho")[None], 6)
    assert torch.equal(trace["ids"], written[0])
    assert trace["cache"].shape == (4, CACHE_FEATURES, 5 + 6 - 1)  # the last token: unread
    np.testing.assert_allclose(trace["cache"], keys_and_values(model, written[0, :-1]),
                               rtol=1e-5, atol=1e-6)
