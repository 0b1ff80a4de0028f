"""FigureRenderer: each frame shows what a full draw of the figure shows, blitted over one
background, which is drawn anew when the layout changes."""

import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.artist import Artist
from matplotlib.patches import Rectangle
from PIL import Image

from helpers.plotting import Heatmap
from helpers.rendering import FigureRenderer, drawing_order, png_bytes
from helpers.widgets import FigureExplorer
from helpers.widgets.self_attention import self_attention_explorer
from tests.figures import assert_shows_a_full_draw, figure_to_png, pixels
from tools.full_draws import count_full_draws


class BarDrawing:
    """A heatmap beside bars under a dashed line. ``animated``: what ``change`` changes,
    the line and each panel's frame, drawn over it."""

    def __init__(self):
        self.figure, (heat_ax, self.bar_ax) = plt.subplots(1, 2, figsize=(6, 3))
        plt.close(self.figure)
        self.heatmap = Heatmap(heat_ax, np.full((4, 4), 0.25))
        self.bars = self.bar_ax.bar(range(4), [0.25] * 4)
        self.line = self.bar_ax.axhline(0.25, color="grey", linestyle="--", label="uniform")
        self.bar_ax.legend(loc="upper right")
        self.bar_ax.set_ylim(0, 1)
        self.animated = [*self.heatmap.artists(), heat_ax.title, *self.bars, self.line,
                         *heat_ax.spines.values(), *self.bar_ax.spines.values()]

    def change(self, seed):
        weights = np.random.default_rng(seed).dirichlet(np.ones(4), size=4)
        mask = np.tril(np.ones((4, 4), dtype=bool)) if seed % 2 else None
        self.heatmap.update(weights, mask=mask)
        for bar, height in zip(self.bars, weights[0], strict=True):
            bar.set_height(height)
        self.heatmap.ax.set_title(f"sample {seed}")


def shown_once():
    """The bar drawing, changed once, and a renderer that has shown it."""
    drawing = BarDrawing()
    renderer = FigureRenderer(drawing.figure)
    drawing.change(0)
    renderer.png(drawing.animated)
    return drawing, renderer


def test_frames_are_blitted_and_show_what_a_full_draw_shows():
    drawing, renderer = shown_once()
    full_draws = count_full_draws(renderer)
    for seed in range(1, 7):
        drawing.change(seed)
        assert_shows_a_full_draw(renderer.png(drawing.animated), drawing.figure,
                                 f"frame {seed}")
    assert full_draws == []


def test_an_artist_that_changes_must_be_declared_animated():
    """A title changed but not declared stays as the background holds it; declared, it is
    drawn, after a full draw (the background held it as it was)."""
    drawing, renderer = shown_once()
    full_draws = count_full_draws(renderer)
    drawing.bar_ax.set_title("a new title")
    with pytest.raises(AssertionError, match="pixels differ"):
        assert_shows_a_full_draw(renderer.png(drawing.animated), drawing.figure)
    drawing.animated.append(drawing.bar_ax.title)
    assert_shows_a_full_draw(renderer.png(drawing.animated), drawing.figure, "declared")
    assert len(full_draws) == 1
    drawing.bar_ax.set_title("and another")
    assert_shows_a_full_draw(renderer.png(drawing.animated), drawing.figure, "blitted")
    assert len(full_draws) == 1


def test_a_new_layout_is_drawn_in_full_and_only_its_background_is_kept():
    drawing, renderer = shown_once()
    full_draws = count_full_draws(renderer)
    for seed, labels in enumerate(["wxyz", "wxyz", "abcd", "abcd", "wxyz"], start=1):
        drawing.heatmap.set_token_labels(list(labels), list(labels))
        drawing.change(seed)  # the contents change too
        frame = renderer.png(drawing.animated, layout=labels)
        assert_shows_a_full_draw(frame, drawing.figure, f"labels {labels}, frame {seed}")
    # Each change of labels, back to wxyz too: one background is kept, the last.
    assert len(full_draws) == 3


def test_a_layout_change_not_named_leaves_the_old_background():
    """What the caller names as the layout is all the renderer knows of it: new tick
    labels under the same layout show the old ones."""
    drawing, renderer = shown_once()
    drawing.heatmap.set_token_labels(list("abcd"), list("abcd"))
    with pytest.raises(AssertionError, match="pixels differ"):
        assert_shows_a_full_draw(renderer.png(drawing.animated), drawing.figure)
    frame = renderer.png(drawing.animated, layout="abcd")
    assert_shows_a_full_draw(frame, drawing.figure, "named")


def test_artists_are_drawn_in_the_order_a_full_draw_draws_them():
    """Declared in any order, they are drawn by zorder, those of one zorder in the order
    they were added (the outline after the cells), the figure's own after the Axes'."""
    drawing, renderer = shown_once()
    ax = drawing.heatmap.ax
    outline = ax.add_patch(Rectangle((-0.5, 0.5), 4, 1, fill=False, edgecolor="red",
                                     linewidth=3))  # zorder 1, as the cells
    caption = drawing.figure.suptitle("caption")
    backwards = [caption, outline, *reversed(drawing.animated)]
    order = drawing_order(backwards)
    assert order.index(drawing.heatmap.image) < order.index(outline) < order.index(
        ax.spines["top"]) < order.index(drawing.heatmap.cell_labels.collection)
    assert order.index(drawing.bars[0]) < order.index(drawing.line)
    assert order[-1] is caption
    for seed in (1, 2):
        drawing.change(seed)
        outline.set_y(seed - 0.5)
        caption.set_text(f"caption {seed}")
        assert_shows_a_full_draw(renderer.png(backwards), drawing.figure, f"frame {seed}")


def test_the_artists_of_a_hidden_axes_are_not_drawn():
    """A hidden panel leaves nothing behind: neither its cells nor its title."""
    drawing, renderer = shown_once()
    ax = drawing.heatmap.ax
    ax.set_visible(False)
    drawing.change(1)
    frame = pixels(renderer.png(drawing.animated, layout="heatmap hidden"))
    width = frame.shape[1]
    panel = ax.get_position()  # in figure fractions; its title sits above it
    columns = slice(int(panel.x0 * width) + 1, int(panel.x1 * width) - 1)
    assert (frame[:, columns] == 255).all(), "something of the hidden panel is drawn"
    drawing.change(2)  # changed while hidden: still not shown
    assert (pixels(renderer.png(drawing.animated, layout="heatmap hidden"))[:, columns]
            == 255).all()
    ax.set_visible(True)
    assert_shows_a_full_draw(renderer.png(drawing.animated), drawing.figure, "shown again")


def test_a_draw_outside_the_renderer_changes_no_frame():
    """A notebook showing ``explorer.figure`` draws it too (saving it at another dpi):
    the next frames are still blitted, and still right."""
    drawing, renderer = shown_once()
    full_draws = count_full_draws(renderer)
    for seed in (1, 2):
        figure_to_png(drawing.figure, dpi=72)
        drawing.change(seed)
        assert_shows_a_full_draw(renderer.png(drawing.animated), drawing.figure, seed)
    assert full_draws == []


class Exploding(Artist):
    """An artist whose drawing fails while ``armed``."""

    armed = False

    def draw(self, renderer):
        if self.armed:
            raise RuntimeError("cannot draw this")


def test_an_error_while_rendering_is_shown_and_the_next_frame_starts_afresh():
    drawing = BarDrawing()
    bomb = Exploding()
    drawing.heatmap.ax.add_artist(bomb)
    drawing.animated.append(bomb)

    class FailingDrawing:
        figure = drawing.figure
        animated = drawing.animated

        def draw(self, seed):
            bomb.armed = seed == 3
            drawing.change(seed)

    slider = widgets.IntSlider(value=0, min=0, max=9)
    explorer = FigureExplorer({"seed": slider}, lambda seed: seed, FailingDrawing())
    slider.value = 2
    shown = explorer.image.value
    full_draws = count_full_draws(explorer.renderer)
    slider.value = 3
    assert isinstance(explorer.last_error, RuntimeError)
    assert "cannot draw this" in explorer.message.value
    assert explorer.image.value == shown  # the last good picture stays
    slider.value = 4
    assert explorer.last_error is None and explorer.message.value == ""
    assert_shows_a_full_draw(explorer.image.value, drawing.figure)
    assert len(full_draws) == 1  # drawn in full: the failed frame left the canvas half drawn
    slider.value = 5
    assert len(full_draws) == 1


def test_explorer_updates_without_full_draws_once_drawn():
    explorer = self_attention_explorer()
    full_draws = count_full_draws(explorer.renderer)
    for name, value in [("d_k", 64), ("scaled", False), ("query", 0), ("d_k", 2)]:
        before = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.image.value != before
    assert full_draws == []


@pytest.mark.parametrize("dpi", [72, 100])
def test_png_has_the_figure_size_at_the_given_dpi(dpi):
    drawing = BarDrawing()
    png = FigureRenderer(drawing.figure, dpi=dpi).png(drawing.animated)
    assert pixels(png).shape == (3 * dpi, 6 * dpi, 3)


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
