"""Notebook 04's explorer (helpers.widgets.causal_attention): the module's context vector
laid tip to tail."""

import numpy as np

from helpers.data import example_inputs


def heatmap_array(explorer):
    return explorer.drawing.heatmap.image.get_array().copy()


def test_causal_explorer_view_is_the_modules_context_vector_laid_tip_to_tail():
    import torch

    from helpers.attention import CausalAttention
    from helpers.data import TOKENS
    from helpers.widgets.causal_attention import causal_attention_view

    x = example_inputs()
    batch = torch.stack([x, x.flip(0)])  # the running example, then its tokens reversed
    causal = np.tril(np.ones((6, 6), dtype=bool))
    limits, reached = set(), [np.zeros((1, 2))]
    for mode in ("eval", "train (dropout 0.5)"):
        with torch.random.fork_rng(), torch.no_grad():
            torch.manual_seed(123)
            module = CausalAttention(3, 2, context_length=6, dropout=0.5).train(mode != "eval")
            torch.manual_seed(123)  # the explorer's dropout pattern, the same for each choice
            context, weights = module(batch, return_weights=True)
            values = module.W_value(batch).numpy()
        for sequence, query in [(0, 3), (1, 5), (1, 0), (0, 5)]:
            view = causal_attention_view(sequence, query, mode, seed=123)
            row = weights[sequence, query].numpy()
            np.testing.assert_allclose(view.weights, weights[sequence].numpy(), rtol=1e-6)
            np.testing.assert_allclose(view.values, values[sequence], rtol=1e-6)
            np.testing.assert_allclose(view.context, context[sequence, query].numpy(),
                                       rtol=1e-5, atol=1e-7)
            # the arrows w_j * v_j, laid tip to tail from the origin, end at the context vector
            np.testing.assert_allclose(view.contributions, row[:, None] * values[sequence],
                                       rtol=1e-6)
            np.testing.assert_allclose(view.tails[0], [0.0, 0.0])
            np.testing.assert_allclose(view.tails[1:], view.tails[:-1] + view.contributions[:-1],
                                       rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(view.tails[-1] + view.contributions[-1], view.context,
                                       rtol=1e-5, atol=1e-6)
            order = TOKENS if sequence == 0 else TOKENS[::-1]
            assert view.token_labels == tuple(order)
            assert view.visible.tolist() == [j <= query for j in range(6)]
            named = f"sequence {sequence}{' (reversed)' if sequence else ''}"  # which one
            assert view.heatmap_title == f"{named}: attention weights ({mode.split()[0]} mode)"
            assert view.value_title == \
                f"context vector of '{order[query]}':\nΣ attention weight × value"
            (x0, x1), (y0, y1) = view.value_limits  # hold every value and context vector
            assert x0 < min(values[..., 0].min(), view.context[0], 0) < x1
            assert y0 < min(values[..., 1].min(), view.context[1], 0) < y1
            assert max(values[..., 0].max(), view.context[0], 0) < x1
            assert max(values[..., 1].max(), view.context[1], 0) < y1
            limits.add(view.value_limits)
        dropped = (weights[0].numpy() == 0) & causal
        assert dropped.any() == (mode != "eval")  # dropout removes weights in train mode only
        tips = np.cumsum(weights.numpy()[..., None] * values[:, None], axis=2)
        reached += [values.reshape(-1, 2), tips.reshape(-1, 2)]
    # one plane for every choice, both modes: arrows can be compared, and no control
    # changes the figure's layout; fitted to what either mode draws, with a margin
    assert len(limits) == 1
    reached = np.concatenate(reached)
    for (low, high), data_low, data_high in zip(view.value_limits, reached.min(0),
                                                reached.max(0), strict=True):
        assert low < data_low and data_high < high
        assert high - low < 1.5 * (data_high - data_low)


def test_causal_explorer_draws_its_view():
    from helpers.widgets.causal_attention import causal_attention_explorer, causal_attention_view

    explorer = causal_attention_explorer(seed=123)
    drawing = explorer.drawing
    heat_ax, value_ax = drawing.heatmap.ax, drawing.value_ax
    for name, value in [("query", 5), ("sequence", 1), ("mode", "train (dropout 0.5)"),
                        ("query", 1), ("sequence", 0), ("mode", "eval")]:
        explorer.controls[name].value = value
        assert explorer.last_error is None
        view = explorer.view
        expected = causal_attention_view(**explorer.values(), seed=123)
        np.testing.assert_array_equal(view.weights, expected.weights)
        assert view.token_labels == expected.token_labels and view.query == expected.query
        # the drawing shows the view, labels included, right after the change
        np.testing.assert_allclose(heatmap_array(explorer), view.weights, rtol=1e-6)
        assert [text.get_text() for text in heat_ax.get_xticklabels()] == list(view.token_labels)
        assert [text.get_text() for text in heat_ax.get_yticklabels()] == list(view.token_labels)
        assert drawing.outline.get_y() == view.query - 0.5
        assert heat_ax.get_title() == view.heatmap_title
        assert value_ax.get_title() == view.value_title
        dots = drawing.dots.get_offsets()
        np.testing.assert_allclose(dots[view.visible], view.values[view.visible], rtol=1e-6)
        assert np.isnan(dots[~view.visible]).all()  # the future's values are not drawn
        assert [text.get_text() for text in drawing.dot_names] == list(view.dot_names)
        np.testing.assert_allclose(drawing.steps.get_offsets(), view.tails, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.stack([drawing.steps.U, drawing.steps.V], axis=1),
                                   view.contributions, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose([drawing.total.U[0], drawing.total.V[0]], view.context,
                                   rtol=1e-6)
        assert (value_ax.get_xlim(), value_ax.get_ylim()) == view.value_limits
        # arrows on one line stay countable: two drawn in a row never share a colour, and
        # the orange arrows lie over the red one
        drawn = np.flatnonzero(np.abs(view.contributions).sum(axis=1) > 0)
        colours = drawing.steps.get_facecolor()[drawn]
        assert all(not np.allclose(a, b) for a, b in zip(colours[:-1], colours[1:], strict=True))
        assert drawing.steps.get_zorder() > drawing.total.get_zorder()


def test_causal_explorer_names_every_visible_token_without_overlapping_names():
    from helpers.data import TOKENS
    from helpers.widgets.causal_attention import causal_attention_explorer

    explorer = causal_attention_explorer()
    renderer = explorer.figure.canvas.get_renderer()
    for sequence, query in [(0, 5), (1, 5), (0, 2)]:
        explorer.controls["sequence"].value = sequence
        explorer.controls["query"].value = query
        names = [text for text in explorer.drawing.dot_names if text.get_text()]
        shown = [word for text in names for word in text.get_text().split("\n")]
        order = TOKENS if sequence == 0 else TOKENS[::-1]
        assert sorted(shown) == sorted(order[: query + 1])  # each visible token, once
        if query == 5:  # "journey" and "starts" have almost the same value: one label
            assert any({"journey", "starts"} <= set(text.get_text().split("\n"))
                       for text in names)
        extents = [text.get_window_extent(renderer) for text in names]
        for a in range(len(extents)):
            for b in range(a + 1, len(extents)):
                assert not extents[a].overlaps(extents[b]), (names[a].get_text(),
                                                             names[b].get_text())
