"""FigureRenderer: each frame shows what a full draw of the figure shows, mostly blitted."""

import io
import random

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.artist import Artist
from matplotlib.patches import Patch, Rectangle
from PIL import Image

from helpers.plotting import Heatmap
from helpers.rendering import BACKGROUND_BYTES, FigureRenderer, png_bytes
from helpers.widgets import FigureExplorer
from helpers.widgets.self_attention import self_attention_explorer
from tests.figures import assert_shows_a_full_draw, figure_to_png, pixels
from tools.course import explorers
from tools.explorer_step import step


def bar_figure():
    figure, (heat_ax, bar_ax) = plt.subplots(1, 2, figsize=(6, 3))
    plt.close(figure)
    heatmap = Heatmap(heat_ax, np.full((4, 4), 0.25))
    bars = bar_ax.bar(range(4), [0.25] * 4)
    bar_ax.axhline(0.25, color="grey", linestyle="--", label="uniform")
    bar_ax.legend(loc="upper right")
    bar_ax.set_ylim(0, 1)
    return figure, heatmap, bars


def change(heatmap, bars, seed):
    weights = np.random.default_rng(seed).dirichlet(np.ones(4), size=4)
    heatmap.update(weights, mask=np.tril(np.ones((4, 4), dtype=bool)) if seed % 2 else None)
    for bar, height in zip(bars, weights[0], strict=True):
        bar.set_height(height)
    heatmap.ax.set_title(f"sample {seed}")


def warm_renderer(**options):
    """The bar figure and a renderer (made with ``options``) that has drawn it, then a
    change: what changes is learnt (both Axes live)."""
    figure, heatmap, bars = bar_figure()
    renderer = FigureRenderer(figure, **options)
    renderer.png()
    change(heatmap, bars, 0)
    renderer.png()
    return figure, heatmap, bars, renderer


def test_blitted_frames_show_what_a_full_draw_shows():
    figure, heatmap, bars = bar_figure()
    renderer = FigureRenderer(figure)
    renderer.png()
    for seed in range(6):
        change(heatmap, bars, seed)
        assert_shows_a_full_draw(renderer.png(), figure, f"frame {seed}")
    # The first picture, and the frame where it learnt what changes.
    assert renderer.full_draws == 2


def test_a_change_it_cannot_blit_gets_a_full_draw():
    figure, heatmap, bars, renderer = warm_renderer()
    draws = renderer.full_draws
    bars[0].axes.set_ylim(0, 0.5)  # new limits: the background is out of date
    assert_shows_a_full_draw(renderer.png(), figure)
    assert renderer.full_draws == draws + 1
    heatmap.set_token_labels(list("abcd"), list("wxyz"))  # new tick labels
    assert_shows_a_full_draw(renderer.png(), figure)
    assert renderer.full_draws == draws + 2
    figure.patch.set_facecolor("whitesmoke")  # the figure's face
    assert_shows_a_full_draw(renderer.png(), figure)
    assert renderer.full_draws == draws + 3
    change(heatmap, bars, 1)  # and blitting again after them
    assert_shows_a_full_draw(renderer.png(), figure)
    assert renderer.full_draws == draws + 3


def test_an_artist_added_to_a_live_axes_is_drawn_with_its_contents():
    figure, heatmap, bars, renderer = warm_renderer()  # the heatmap's Axes is live
    draws = renderer.full_draws
    line = heatmap.ax.axvline(1.5, color="red")
    assert_shows_a_full_draw(renderer.png(), figure, "line added")
    line.set_xdata([2.5, 2.5])
    assert_shows_a_full_draw(renderer.png(), figure, "line moved")
    line.remove()
    assert_shows_a_full_draw(renderer.png(), figure, "line removed")
    assert renderer.full_draws == draws


def test_a_layout_seen_before_comes_back_from_its_kept_background():
    figure, heatmap, bars, renderer = warm_renderer()
    draws, reused = renderer.full_draws, renderer.layouts_reused
    for seed, labels in enumerate(["wxyz", "abcd", "wxyz", "abcd", "wxyz"]):
        heatmap.set_token_labels(list(labels), list(labels))
        change(heatmap, bars, seed)  # the contents change too
        assert_shows_a_full_draw(renderer.png(), figure, f"labels {labels}, frame {seed}")
    # Two new layouts drawn in full; the other three frames restored a kept background.
    assert (renderer.full_draws - draws, renderer.layouts_reused - reused) == (2, 3)
    width, height = figure.canvas.get_width_height()
    assert renderer.backgrounds_size() == 3 * width * height * 4  # the first layout too


def test_a_panel_shown_again_comes_back_from_its_kept_background():
    figure, heatmaps, mask = heatmap_row(panels=3)
    renderer = FigureRenderer(figure)
    renderer.png()
    for heatmap in heatmaps:
        heatmap.update(np.eye(4) * 0.9, mask=mask)
    renderer.png()
    draws = renderer.full_draws
    for value, shown in [(0.1, 1), (0.2, 3), (0.3, 1), (0.4, 2), (0.5, 3), (0.6, 2)]:
        for h, heatmap in enumerate(heatmaps):
            heatmap.ax.set_visible(h < shown)
            heatmap.update(np.eye(4) * value, mask=mask)
        assert_shows_a_full_draw(renderer.png(), figure, f"{shown} panels shown")
    assert renderer.full_draws == draws + 2  # one panel, then two: the new layouts


def test_a_panel_made_live_keeps_the_backgrounds_where_it_was_hidden():
    """Panels 1 and 2 first change when they are shown again: the background kept for one
    panel shown holds nothing of them, and comes back; the first picture's, three shown,
    is forgotten (it held their old cells)."""
    figure, heatmaps, mask = heatmap_row(panels=3)
    renderer = FigureRenderer(figure)
    renderer.png()
    steps = [(1, 0.1), (3, 0.2), (1, 0.3), (3, 0.4), (1, 0.5)]
    draws = []
    for shown, value in steps:
        for h, heatmap in enumerate(heatmaps):
            heatmap.ax.set_visible(h < shown)
            if h < shown:
                heatmap.update(np.eye(4) * value, mask=mask)
        assert_shows_a_full_draw(renderer.png(), figure, f"{shown} shown, {value}")
        draws.append(renderer.full_draws)
    # New layouts and what was learnt: one panel (learning panel 0), three (panels 1, 2
    # made live); then one panel comes back from its kept background, and so do three.
    assert draws == [2, 3, 3, 3, 3]


def test_kept_backgrounds_stay_within_their_memory():
    background = 600 * 300 * 4  # the bar figure (6 x 3 in) at 100 dpi, RGBA
    figure, heatmap, bars, renderer = warm_renderer(background_bytes=int(2.5 * background))
    for labels in ["abcd", "efgh", "ijkl", "mnop"]:
        heatmap.set_token_labels(list(labels), list(labels))
        renderer.png()
        assert len(renderer.backgrounds) <= 2
        assert renderer.backgrounds_size() <= renderer.background_bytes
    draws = renderer.full_draws
    heatmap.set_token_labels(list("ijkl"), list("ijkl"))  # kept: the one before last
    assert_shows_a_full_draw(renderer.png(), figure, "kept")
    assert renderer.full_draws == draws
    heatmap.set_token_labels(list("abcd"), list("abcd"))  # forgotten: drawn again
    assert_shows_a_full_draw(renderer.png(), figure, "forgotten")
    assert renderer.full_draws == draws + 1


def test_a_legend_entry_shown_or_hidden_is_part_of_the_layout():
    """A legend in an Axes of its own, one entry shown only in some states: the legend
    stays in the background, one kept background for each state."""
    figure, (heat_ax, legend_ax) = plt.subplots(1, 2, figsize=(6, 3))
    plt.close(figure)
    heatmap = Heatmap(heat_ax, np.full((4, 4), 0.25))
    legend_ax.set_axis_off()
    legend = legend_ax.legend(handles=[Patch(facecolor="grey", label="masked"),
                                       Patch(facecolor="white", label="beyond T")])
    renderer = FigureRenderer(figure)
    renderer.png()
    heatmap.update(np.eye(4))
    renderer.png()
    draws = renderer.full_draws
    for seed, shown in enumerate([False, True, False, True]):
        legend.legend_handles[1].set_visible(shown)
        legend.get_texts()[1].set_visible(shown)
        heatmap.update(np.random.default_rng(seed).random((4, 4)))
        assert_shows_a_full_draw(renderer.png(), figure, f"entry shown: {shown}")
    assert renderer.full_draws == draws + 1  # the entry hidden: a new layout
    assert legend_ax not in renderer.live_axes and not legend.get_animated()


def test_an_unchanged_heading_above_a_live_panel_stays_in_the_background():
    figure, heatmaps, mask = heatmap_row(panels=2)
    renderer = FigureRenderer(figure)
    renderer.png()
    for value in (0.9, 0.5):
        heatmaps[0].update(np.eye(4) * value, mask=mask)
        assert_shows_a_full_draw(renderer.png(), figure, value)
    title = heatmaps[0].ax.title
    assert heatmaps[0].ax in renderer.live_axes and not title.get_animated()
    draws = renderer.full_draws
    for value, words in [(0.3, "panel 0, renamed"), (0.7, "and again")]:
        title.set_text(words)  # now it changes: redrawn on every frame from here
        heatmaps[0].update(np.eye(4) * value, mask=mask)
        assert_shows_a_full_draw(renderer.png(), figure, words)
    assert title.get_animated() and renderer.full_draws == draws + 1


def test_a_heading_is_redrawn_when_something_unclipped_in_its_panel_can_reach_it():
    figure, heatmaps, mask = heatmap_row(panels=2)
    ax = heatmaps[0].ax
    marker = ax.add_patch(Rectangle((0, -1.5), 1, 0.5, color="red", clip_on=False))
    renderer = FigureRenderer(figure)
    renderer.png()
    for top in (-1.0, -2.5, -3.0):  # up into the heading (rows count downwards)
        marker.set_y(top)
        heatmaps[0].update(np.eye(4) * -top / 3, mask=mask)
        assert_shows_a_full_draw(renderer.png(), figure, f"marker at {top}")
    assert ax.title.get_animated()


def test_a_part_that_becomes_live_is_not_left_in_a_kept_background():
    """The bars' Axes is in the background until the bars first change: the backgrounds
    kept before hold the old bars, and must not come back under the new ones."""
    figure, heatmap, bars = bar_figure()
    renderer = FigureRenderer(figure)
    renderer.png()
    heatmap.set_token_labels(list("abcd"), list("abcd"))
    renderer.png()
    for bar in bars:
        bar.set_height(0.05)  # much lower than before: old bars would show above them
    heatmap.set_token_labels(list("0123"), list("0123"))  # the first layout again
    assert_shows_a_full_draw(renderer.png(), figure, "lower bars, first labels")
    assert bars[0].get_animated()


def test_figure_level_text_is_blitted():
    figure, heatmap, bars = bar_figure()
    renderer = FigureRenderer(figure)
    title = figure.suptitle("first")
    renderer.png()
    for word in ("second", "a much longer third caption", "4"):
        title.set_text(word)
        assert_shows_a_full_draw(renderer.png(), figure, word)
    assert renderer.full_draws == 2


def test_a_static_figure_legend_stays_in_the_background():
    figure, heatmap, bars = bar_figure()
    legend = figure.legend(handles=[Patch(facecolor="grey", label="masked")], loc="lower left")
    title = figure.suptitle("first")
    renderer = FigureRenderer(figure)
    renderer.png()
    for seed, word in enumerate(("second", "third", "fourth")):
        title.set_text(word)
        change(heatmap, bars, seed)
        assert_shows_a_full_draw(renderer.png(), figure, word)
    assert not legend.get_animated() and title.get_animated()
    assert renderer.full_draws == 2


def test_a_legend_whose_entries_change_is_redrawn_without_a_full_draw():
    figure, heatmap, bars, renderer = warm_renderer()
    legend = bars[0].axes.get_legend()
    draws = renderer.full_draws
    for shown in (False, True, False):
        legend.get_texts()[0].set_visible(shown)
        legend.legend_handles[0].set_visible(shown)
        change(heatmap, bars, 2)
        assert_shows_a_full_draw(renderer.png(), figure, f"entry shown: {shown}")
    assert renderer.full_draws == draws


def test_explorer_updates_without_full_draws_once_warm():
    explorer = self_attention_explorer()
    for name, value in [("d_k", 8), ("scaled", False), ("query", 3)]:
        explorer.controls[name].value = value
    draws = explorer.renderer.full_draws
    for name, value in [("d_k", 64), ("scaled", True), ("query", 0), ("d_k", 2)]:
        before = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.image.value != before
    assert explorer.renderer.full_draws == draws


class Exploding(Artist):
    armed = False

    def draw(self, renderer):
        if self.armed:
            raise RuntimeError("cannot draw this")


def test_an_error_while_rendering_is_shown_and_the_next_frame_recovers():
    figure, heatmap, bars = bar_figure()
    bomb = Exploding()
    heatmap.ax.add_artist(bomb)
    slider = widgets.IntSlider(value=0, min=0, max=9)

    class Drawing:
        def __init__(self):
            self.figure = figure

        def draw(self, seed):
            bomb.armed = seed == 3
            bomb.stale = True
            change(heatmap, bars, seed)

    explorer = FigureExplorer({"seed": slider}, lambda seed: seed, Drawing())
    slider.value = 2
    shown = explorer.image.value
    slider.value = 3
    assert isinstance(explorer.last_error, RuntimeError)
    assert "cannot draw this" in explorer.message.value
    assert explorer.image.value == shown  # the last good picture stays
    slider.value = 4
    assert explorer.last_error is None and explorer.message.value == ""
    assert_shows_a_full_draw(explorer.image.value, figure)


@pytest.mark.parametrize("dpi", [72, 100])
def test_png_has_the_figure_size_at_the_given_dpi(dpi):
    figure, _, _ = bar_figure()
    assert pixels(FigureRenderer(figure, dpi=dpi).png()).shape == (3 * dpi, 6 * dpi, 3)


def heatmap_row(panels=3, size=4):
    figure, axes = plt.subplots(1, panels, figsize=(2.6 * panels, 3), squeeze=False)
    figure.subplots_adjust(bottom=0.3, top=0.8, wspace=0.5)
    plt.close(figure)
    mask = np.tril(np.ones((size, size), dtype=bool))  # masked cells hold empty texts
    heatmaps = [Heatmap(ax, np.eye(size) * 0.5, mask=mask, title=f"panel {i}")
                for i, ax in enumerate(axes[0])]
    return figure, heatmaps, mask


def test_hiding_an_axes_hides_everything_in_it():
    """A hidden panel must not leave its title or cell values behind on the next frame."""
    figure, heatmaps, mask = heatmap_row(panels=2)
    renderer = FigureRenderer(figure)
    renderer.png()
    heatmaps[1].update(np.eye(4) * 0.9, mask=mask)  # the renderer learns what changes
    renderer.png()
    blitted = renderer.full_draws
    heatmaps[1].update(np.eye(4) * 0.3, mask=mask)
    heatmaps[1].ax.set_visible(False)
    frame = pixels(renderer.png())
    assert renderer.full_draws == blitted + 1  # hiding the panel forced a full draw
    width = frame.shape[1]
    panel = heatmaps[1].ax.get_position()  # in figure fractions; its title sits above it
    columns = slice(int(panel.x0 * width) + 1, int(panel.x1 * width) - 1)
    assert (frame[:, columns] == 255).all(), "something of the hidden panel is still drawn"
    heatmaps[1].update(np.eye(4) * 0.6, mask=mask)  # changed while hidden: still not shown
    assert (pixels(renderer.png())[:, columns] == 255).all()
    heatmaps[1].ax.set_visible(True)
    assert_shows_a_full_draw(renderer.png(), figure)


def test_empty_texts_and_hidden_panels_do_not_force_full_draws():
    """Masked cells show no text and a hidden panel draws nothing: matplotlib leaves
    such artists marked stale after a draw, which must not read as a change."""
    figure, heatmaps, mask = heatmap_row()
    heatmaps[2].ax.set_visible(False)
    renderer = FigureRenderer(figure)
    renderer.png()
    heatmaps[1].update(np.eye(4) * 0.9, mask=mask)
    heatmaps[1].ax.set_title("")
    renderer.png()
    draws = renderer.full_draws
    for value in (0.1, 0.4, 0.7):
        heatmaps[1].update(np.eye(4) * value, mask=mask)
        assert_shows_a_full_draw(renderer.png(), figure, value)
    assert renderer.full_draws == draws


def test_a_draw_outside_the_renderer_is_not_taken_for_a_change():
    """A notebook showing `explorer.figure` draws it too (saving it sets and resets its
    dpi, which marks it stale): the next frame shows the figure as it is, and the one
    after it is blitted again."""
    figure, heatmaps, mask = heatmap_row()
    renderer = FigureRenderer(figure)
    renderer.png()
    heatmaps[0].update(np.eye(4) * 0.9, mask=mask)
    renderer.png()
    draws = renderer.full_draws
    for value in (0.2, 0.6):
        figure_to_png(figure)
        heatmaps[0].update(np.eye(4) * value, mask=mask)
        assert_shows_a_full_draw(renderer.png(), figure, value)
        heatmaps[0].update(np.eye(4) * value / 2, mask=mask)
        assert_shows_a_full_draw(renderer.png(), figure, value / 2)
    assert renderer.full_draws <= draws + 2


EXPLORERS = explorers()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPLORERS))
def test_every_explorer_shows_what_a_full_draw_shows(name):
    """Round after round of steps of every control, then steps of controls in a shuffled
    order (the same on every machine): layouts come back with other contents in them."""
    explorer = EXPLORERS[name]()
    names = list(explorer.controls)
    walk = 2 * names + random.Random(name).choices(names, k=3 * len(names))
    for control in walk:
        step(explorer, control)
        assert explorer.last_error is None, control
        assert_shows_a_full_draw(explorer.image.value, explorer.figure,
                                 f"after a step of {control}")
    assert explorer.renderer.backgrounds_size() <= BACKGROUND_BYTES


class Canvas:
    """What png_bytes reads of a canvas."""

    def __init__(self, rgba):
        self.rgba = rgba

    def get_width_height(self):
        return self.rgba.shape[1], self.rgba.shape[0]

    def buffer_rgba(self):
        return memoryview(self.rgba)


@pytest.mark.parametrize("size", [(1, 1), (7, 3), (155, 46)])
def test_png_encoding_keeps_every_pixel(size):
    width, height = size
    rgba = np.random.default_rng(0).integers(0, 256, (height, width, 4), dtype=np.uint8)
    image = Image.open(io.BytesIO(png_bytes(Canvas(rgba))))
    assert image.mode == "RGB" and image.size == size
    np.testing.assert_array_equal(np.asarray(image), rgba[..., :3])
