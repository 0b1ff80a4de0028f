"""Notebook 09's generation explorer: the view as plain data, and the widget driven
headlessly (set a control, inspect the figure)."""

import functools

import numpy as np
import pytest
import torch

from helpers.gpt.data import LETTERS, encode
from helpers.gpt.generation import generate_with_cache, generation_trace
from helpers.gpt.training import one_thread
from helpers.widgets.explorer import FigureExplorer
from helpers.widgets.generation import (
    EXAMPLE_PROMPTS,
    generation_explorer,
    generation_view,
    untrained_model,
)
from tests.figures import assert_shows_a_full_draw
from tests.widgets.support import step


@pytest.fixture(autouse=True)
def on_one_thread():
    with one_thread():  # tiny tensors: a second thread only slows them down
        yield


@pytest.fixture(scope="module")
def model():
    return untrained_model()


def traces(model, new_tokens):
    """What the explorer gives generation_view: a prompt's trace, generated once."""
    return functools.cache(lambda prompt: generation_trace(model, encode(prompt), new_tokens))


def test_the_view_at_the_prefill_and_later_is_the_cache_and_the_newest_row(model):
    trace_of = traces(model, 6)
    first = generation_view("abcab", 1, 1, trace_of=trace_of, new_tokens=6)
    written, _ = generate_with_cache(model, encode("abcab")[None], 6)
    letters = tuple(LETTERS[i] for i in written[0].tolist())
    assert first.tokens == letters[:6] + ("",) * 5  # the prompt, and the token it writes
    assert (first.cache[:, :5] == 2).all() and (first.cache[:, 5:] == 0).all()
    assert first.cache.shape == (4, 11)  # (2L, T_max): keys and values of each layer
    assert first.keys.tolist() == [True] * 5 + [False] * 6
    with torch.no_grad():
        _, weights = model(written[:, :9], return_weights=True)  # (1, L, H, T, T)
    np.testing.assert_allclose(first.weights[:, :5], weights[0, 1, :, 4, :5].numpy(),
                               rtol=1e-5, atol=1e-6)
    assert (first.weights[:, 5:] == 0).all() and "prefill" in first.heading
    fourth = generation_view("abcab", 4, 0, trace_of=trace_of, new_tokens=6)
    assert (fourth.cache[:, :7] == 1).all() and (fourth.cache[:, 7] == 2).all()
    assert (fourth.cache[:, 8:] == 0).all()
    np.testing.assert_allclose(fourth.weights[:, :8], weights[0, 0, :, 7, :8].numpy(),
                               rtol=1e-5, atol=1e-6)
    assert f"writes {letters[8]!r}" in fourth.heading and "8 keys" in fourth.heading
    assert "layer 0" in fourth.caption
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
        np.testing.assert_array_equal(np.asarray(drawing.cache_cells.get_array())[1:],
                                      view.cache)
        np.testing.assert_allclose(drawing.heatmap.image.get_array(), view.weights)
        assert list(drawing.letters.texts[0]) == list(view.tokens)
        assert (drawing.letters.texts[1:] == "").all()
        assert explorer.drawing.prompt_lines[0].get_xdata()[0] == view.prompt_length - 0.5
        assert_shows_a_full_draw(explorer.image.value, explorer.figure, f"after {name}")


def test_shorter_prompts_get_blank_columns_in_the_same_picture(model):
    explorer = generation_explorer(model, prompts=["abcdefgh", "ab"], new_tokens=4)
    width = len(explorer.view.tokens)
    explorer.controls["prompt"].value = "ab"
    assert explorer.last_error is None and len(explorer.view.tokens) == width == 12
    assert explorer.view.tokens[7:] == ("",) * 5 and not explorer.view.keys[2:].any()


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

    calls = []
    real = module.generation_trace
    monkeypatch.setattr(module, "generation_trace",
                        lambda *args: calls.append(args[1].tolist()) or real(*args))
    explorer = generation_explorer(model)
    for _ in range(3):
        step(explorer, "step")
    explorer.controls["prompt"].value = EXAMPLE_PROMPTS[1]
    explorer.controls["prompt"].value = EXAMPLE_PROMPTS[0]
    assert calls == [encode(EXAMPLE_PROMPTS[0]).tolist(), encode(EXAMPLE_PROMPTS[1]).tolist()]
