"""Notebook 05: the multi-head explorer's maths and the explorer driven headlessly (its
exercises' checks are in test_multi_head_checks.py)."""

import numpy as np
import pytest
import torch

from helpers.attention import (
    MultiHeadAttention,
    causal_mask,
    head_split_problem,
    multi_head_weights,
)
from helpers.data import TOKENS, example_inputs
from helpers.widgets import SEQUENCE_ORDERS, multi_head_explorer

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


# ---------------------------------------------------------------- the explorer, headless


def visible_panels(explorer):
    return [ax for ax in explorer.figure.axes[:-1] if ax.get_visible()]  # last axes: colorbar


def test_starts_with_every_panel_shown_and_a_d_out_each_h_divides():
    explorer = multi_head_explorer()  # its static picture is read without a kernel: no gap
    assert explorer.last_error is None and explorer.message.value == ""
    assert len(explorer.figure.axes) == 4 + 1
    assert len(visible_panels(explorer)) == explorer.controls["num_heads"].value == 4
    d_out = explorer.controls["d_out"].value
    assert all(head_split_problem(d_out, h) is None for h in range(1, 5))


@pytest.mark.parametrize("num_heads, d_out", [(1, 5), (4, 12)])
def test_panels_show_the_model_and_update_in_place(num_heads, d_out):
    explorer = multi_head_explorer(seed=11)
    images = [ax.collections[0] for ax in explorer.figure.axes[:4]]
    explorer.controls["num_heads"].value = num_heads
    explorer.controls["d_out"].value = d_out
    assert explorer.last_error is None
    panels = visible_panels(explorer)
    assert len(panels) == num_heads
    expected = multi_head_weights(example_inputs(), d_out, num_heads, seed=11,
                                  weight_std=2.0).numpy()
    for h, ax in enumerate(panels):
        assert ax.collections[0] is images[h]
        np.testing.assert_allclose(ax.collections[0].get_array(), expected[h], rtol=1e-6)
    assert f"{d_out} / {num_heads} = {d_out // num_heads}" in explorer.figure.texts[0].get_text()


def test_every_control_changes_the_picture():
    explorer = multi_head_explorer()
    changes = [("sequence", "reversed"), ("num_heads", 2), ("d_out", 8), ("sequence", "shuffled")]
    for name, value in changes:
        before = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.last_error is None
        assert explorer.image.value != before, f"changing {name} left the image as it was"
    before = explorer.image.value
    explorer.controls["new_weights"].click()
    assert explorer.image.value != before
    assert "seed 124" in explorer.figure.texts[0].get_text()


def test_the_sequence_control_reorders_the_tokens_and_their_labels():
    explorer = multi_head_explorer(seed=3)
    explorer.controls["sequence"].value = "shuffled"
    order = list(SEQUENCE_ORDERS["shuffled"])
    ax = explorer.figure.axes[0]
    names = [TOKENS[i] for i in order]
    assert [text.get_text() for text in ax.texts[-12:]] == names + names  # rows, then columns
    h, d_out = explorer.controls["num_heads"].value, explorer.controls["d_out"].value
    expected = multi_head_weights(example_inputs()[order], d_out, h, seed=3, weight_std=2.0)
    np.testing.assert_allclose(ax.collections[0].get_array(), expected[0].numpy(), rtol=1e-6)


def test_an_uneven_split_gets_a_friendly_message_and_recovers():
    explorer = multi_head_explorer()
    explorer.controls["num_heads"].value = 2
    explorer.controls["d_out"].value = 4
    picture = explorer.image.value
    explorer.controls["d_out"].value = 5
    assert explorer.last_error is None and explorer.message.value == ""  # guidance, no error
    for words in ("d_out = 5", "2 heads", "4 or 6"):
        assert words in explorer.notice.value
    assert not any(ax.get_visible() for ax in explorer.figure.axes[:4])  # no panel to misread
    assert "no multi-head split" in explorer.figure._suptitle.get_text()
    assert explorer.image.value != picture
    explorer.controls["d_out"].value = 6
    assert explorer.notice.value == ""
    assert sum(ax.get_visible() for ax in explorer.figure.axes[:4]) == 2
    assert explorer.image.value != picture

