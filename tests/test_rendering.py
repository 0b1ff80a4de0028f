"""FigureRenderer: each frame shows the figure as a full draw would, without full draws."""

import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.artist import Artist
from matplotlib.axis import Axis
from matplotlib.patches import Patch
from matplotlib.text import Text
from PIL import Image

from helpers.plotting import Heatmap, figure_to_png
from helpers.rendering import FigureRenderer
from helpers.widgets import EXPLORERS, self_attention_explorer


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def full_draw(figure) -> np.ndarray:
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(int)


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


def test_blitted_frames_equal_a_full_draw_pixel_for_pixel():
    figure, heatmap, bars = bar_figure()
    renderer = FigureRenderer(figure, text_sprites=False)
    renderer.png()
    for seed in range(6):
        change(heatmap, bars, seed)
        frame = pixels(renderer.png())
        assert np.array_equal(frame, full_draw(figure)), f"frame {seed} differs"
    # Only the first frame and the one that learnt what changes were full draws
    # (plus one when the mask's overlay appeared).
    assert renderer.full_draws <= 3


def test_cached_text_looks_like_agg_text():
    figure, heatmap, bars = bar_figure()
    renderer = FigureRenderer(figure)
    renderer.png()
    for seed in range(4):
        change(heatmap, bars, seed)
        difference = np.abs(pixels(renderer.png()) - full_draw(figure)).max(axis=-1)
        # Text is placed to the nearest pixel instead of a fraction of one: only the
        # edges of some glyphs differ, never whole shapes (every text here is a sprite).
        assert (difference > 0).mean() < 0.04
        assert (difference > 128).mean() < 0.005


def test_a_change_it_cannot_blit_gets_a_full_draw():
    figure, heatmap, bars = bar_figure()
    renderer = FigureRenderer(figure, text_sprites=False)
    renderer.png()
    change(heatmap, bars, 0)
    renderer.png()
    draws = renderer.full_draws
    bars[0].axes.set_ylim(0, 0.5)  # new limits: the background is out of date
    assert np.array_equal(pixels(renderer.png()), full_draw(figure))
    assert renderer.full_draws == draws + 1
    bars[0].axes.axvline(1.5, color="red")  # a new artist
    assert np.array_equal(pixels(renderer.png()), full_draw(figure))
    assert renderer.full_draws == draws + 2


def test_figure_level_text_is_blitted():
    figure, heatmap, bars = bar_figure()
    renderer = FigureRenderer(figure, text_sprites=False)
    title = figure.suptitle("first")
    renderer.png()
    for word in ("second", "third", "fourth"):
        title.set_text(word)
        assert np.array_equal(pixels(renderer.png()), full_draw(figure))
    assert renderer.full_draws == 2


def test_explorer_updates_without_full_draws_once_warm():
    explorer = self_attention_explorer()
    for name, value in [("d_k", 8), ("scaled", False), ("query", 3)]:
        explorer.controls[name].value = value
    draws = explorer._renderer.full_draws
    for name, value in [("d_k", 64), ("scaled", True), ("query", 0), ("d_k", 2)]:
        before = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.image.value != before
    assert explorer._renderer.full_draws == draws


class Exploding(Artist):
    armed = False

    def draw(self, renderer):
        if self.armed:
            raise RuntimeError("cannot draw this")


def test_an_error_while_rendering_is_shown_and_the_next_frame_recovers():
    from helpers.widgets import FigureExplorer

    figure, heatmap, bars = bar_figure()
    bomb = Exploding()
    heatmap.ax.add_artist(bomb)
    slider = widgets.IntSlider(value=0, min=0, max=9)

    def redraw(seed):
        bomb.armed = seed == 3
        bomb.stale = True
        change(heatmap, bars, seed)

    explorer = FigureExplorer({"seed": slider}, figure, redraw)
    slider.value = 2
    shown = explorer.image.value
    slider.value = 3
    assert isinstance(explorer.last_error, RuntimeError)
    assert "cannot draw this" in explorer.message.value
    assert explorer.image.value == shown  # the last good picture stays
    slider.value = 4
    assert explorer.last_error is None and explorer.message.value == ""
    difference = np.abs(pixels(explorer.image.value) - full_draw(figure)).max(axis=-1)
    assert (difference > 128).mean() < 0.005


@pytest.mark.parametrize("dpi", [72, 100])
def test_png_has_the_figure_size_at_the_given_dpi(dpi):
    figure, _, _ = bar_figure()
    assert pixels(FigureRenderer(figure, dpi=dpi).png()).shape == (3 * dpi, 6 * dpi, 3)


def test_hiding_an_axes_hides_everything_in_it():
    """A hidden panel must not leave its title or cell values behind on the next frame."""
    figure, axes = plt.subplots(1, 2, figsize=(5, 2.5))
    plt.close(figure)
    heatmaps = [Heatmap(ax, np.eye(3) * 0.5, title=f"panel {i}") for i, ax in enumerate(axes)]
    renderer = FigureRenderer(figure)
    renderer.png()
    heatmaps[1].update(np.eye(3) * 0.9)  # warm up: the renderer learns what changes
    renderer.png()
    heatmaps[1].update(np.eye(3) * 0.6)
    renderer.png()
    blitted = renderer.full_draws
    heatmaps[1].update(np.eye(3) * 0.3)
    axes[1].set_visible(False)
    frame = pixels(renderer.png())
    assert renderer.full_draws == blitted + 1  # hiding the panel forced a full draw
    width = frame.shape[1]
    panel = axes[1].get_position()  # in figure fractions; its title sits above it
    columns = slice(int(panel.x0 * width) + 1, int(panel.x1 * width) - 1)
    assert (frame[:, columns] == 255).all(), "something of the hidden panel is still drawn"
    difference = np.abs(frame - full_draw(figure)).max(axis=-1)
    assert (difference > 128).mean() < 0.005


def heatmap_row(panels=3, size=4):
    figure, axes = plt.subplots(1, panels, figsize=(2.6 * panels, 3), squeeze=False)
    figure.subplots_adjust(bottom=0.3, top=0.8, wspace=0.5)
    plt.close(figure)
    mask = np.tril(np.ones((size, size), dtype=bool))  # masked cells hold empty texts
    heatmaps = [Heatmap(ax, np.eye(size) * 0.5, mask=mask) for ax in axes[0]]
    return figure, heatmaps, mask


def test_tick_label_colours_changed_in_place_are_shown():
    """An explorer greys out the tick labels of tokens beyond the sequence: a change to a
    tick label's colour does not mark its Axis stale, yet must reach the picture."""
    figure, heatmaps, mask = heatmap_row(panels=1)
    renderer = FigureRenderer(figure, text_sprites=False)
    renderer.png()
    for grey in (2, 1, 3, 0):
        heatmaps[0].update(np.eye(4) * grey / 4, mask=mask)
        for k, label in enumerate(heatmaps[0].ax.get_yticklabels()):
            label.set_color("black" if k < grey else "#bbbbbb")
        assert np.array_equal(pixels(renderer.png()), full_draw(figure)), f"grey from {grey}"


def test_a_legend_apart_from_a_changing_title_stays_in_the_background():
    figure, heatmaps, mask = heatmap_row()
    legend = figure.legend(handles=[Patch(facecolor="grey", label="masked")],
                           loc="lower center")
    title = figure.suptitle("first")
    renderer = FigureRenderer(figure, text_sprites=False)
    renderer.png()
    for word in ("second", "third", "fourth"):
        title.set_text(word)
        heatmaps[1].update(np.eye(4) * len(word) / 10, mask=mask)
        assert np.array_equal(pixels(renderer.png()), full_draw(figure)), word
    assert renderer.full_draws == 2
    assert legend not in {artist for _container, artist in renderer._foreground}
    # A title moved onto the legend is caught: the frame is drawn in full, and still right.
    title.set_y(0.02)
    assert np.array_equal(pixels(renderer.png()), full_draw(figure))
    assert renderer.full_draws == 3
    title.set_text("fifth")
    assert np.array_equal(pixels(renderer.png()), full_draw(figure))
    assert renderer.full_draws == 3  # the legend is now redrawn over the title each frame


def test_empty_texts_and_hidden_panels_do_not_force_full_draws():
    """Masked cells hold empty texts and a hidden panel draws nothing: matplotlib leaves
    them marked stale, which must not read as a change on every frame."""
    figure, heatmaps, mask = heatmap_row()
    heatmaps[2].ax.set_visible(False)
    renderer = FigureRenderer(figure, text_sprites=False)
    renderer.png()
    heatmaps[1].update(np.eye(4) * 0.9, mask=mask)
    heatmaps[2].update(np.eye(4) * 0.9, mask=mask)  # hidden: changes nothing on screen
    renderer.png()
    draws = renderer.full_draws
    for value in (0.1, 0.4, 0.7):
        heatmaps[1].update(np.eye(4) * value, mask=mask)
        heatmaps[2].update(np.eye(4) * value, mask=mask)
        assert np.array_equal(pixels(renderer.png()), full_draw(figure)), value
    assert renderer.full_draws == draws
    heatmaps[2].ax.set_visible(True)
    assert np.array_equal(pixels(renderer.png()), full_draw(figure))


def test_cached_rotated_tick_labels_look_like_agg_text():
    figure, heatmaps, mask = heatmap_row(panels=1)
    ax = heatmaps[0].ax
    renderer = FigureRenderer(figure)
    renderer.png()
    # Twice: a string seen for the first time is drawn by Agg, the second time a sprite.
    for words in (["a", "bb", "ccc", "dd"], ["step", "one", "with", "Your"], ["x"] * 4) * 2:
        ax.set_xticks(range(4), labels=words, rotation=45, ha="right")
        frame = pixels(renderer.png())
        difference = np.abs(frame - full_draw(figure)).max(axis=-1)
        assert (difference > 0).mean() < 0.06  # a small figure, mostly text, all sprites
        assert (difference > 128).mean() < 0.005
    # New tick labels: a full draw each time, and the axis stays in the background.
    assert renderer.full_draws == 1 + 6
    assert not any(isinstance(artist, Axis) for _ax, artist in renderer._foreground)


def test_a_draw_outside_the_renderer_is_not_taken_for_a_change():
    """A notebook showing `explorer.figure` draws it too; the next frames still blit."""
    figure, heatmaps, mask = heatmap_row()
    renderer = FigureRenderer(figure, text_sprites=False)
    renderer.png()
    heatmaps[0].update(np.eye(4) * 0.9, mask=mask)
    renderer.png()
    draws = renderer.full_draws
    for value in (0.2, 0.6):
        figure_to_png(figure)
        heatmaps[0].update(np.eye(4) * value, mask=mask)
        assert np.array_equal(pixels(renderer.png()), full_draw(figure))
    assert renderer.full_draws == draws


def near_axes_edges(figure) -> np.ndarray:
    """Pixels within one pixel of an Axes' frame (rows from the top, as in a PNG)."""
    width, height = figure.canvas.get_width_height()
    near = np.zeros((height, width), dtype=bool)
    for ax in figure.axes:
        x0, y0, x1, y1 = ax.get_window_extent().extents
        top, bottom = height - y1, height - y0
        for row in (top, bottom):
            near[max(round(row) - 1, 0):round(row) + 2, max(int(x0) - 1, 0):int(x1) + 2] = True
        for column in (x0, x1):
            near[max(int(top) - 1, 0):int(bottom) + 2,
                 max(round(column) - 1, 0):round(column) + 2] = True
    return near


def near_text(figure, reach: int = 2) -> np.ndarray:
    """Pixels where a full draw shows text, widened by ``reach`` pixels: where a sprite may
    sit up to half a pixel off Agg's own drawing."""
    texts = [text for text in figure.findobj(Text) if text.get_visible() and text.get_text()]
    for text in texts:
        text.set_visible(False)
    try:
        without = full_draw(figure)
    finally:
        for text in texts:
            text.set_visible(True)
    drawn = np.abs(full_draw(figure) - without).max(-1) > 0
    padded = np.pad(drawn, reach)
    height, width = drawn.shape
    return np.logical_or.reduce([padded[dy:dy + height, dx:dx + width]
                                 for dy in range(2 * reach + 1) for dx in range(2 * reach + 1)])


@pytest.mark.parametrize("text_sprites", [False, True])
@pytest.mark.parametrize("name", list(EXPLORERS))
def test_every_explorer_shows_what_a_full_draw_shows(name, text_sprites):
    explorer = EXPLORERS[name]()
    explorer._renderer.text_sprites = text_sprites
    names = list(explorer.controls)
    for step in range(2 * len(names)):
        explorer.step(names[step % len(names)])
        assert explorer.last_error is None
        difference = np.abs(pixels(explorer.image.value) - full_draw(explorer.figure)).max(-1)
        if not text_sprites:  # then every pixel is Agg's
            # except a few faint ones where the antialiased end of a tick mark (kept in
            # the background) reaches into the edge of a redrawn heatmap
            assert difference.max() <= 16, names[step % len(names)]
            assert not (difference.astype(bool) & ~near_axes_edges(explorer.figure)).any()
        else:  # text from sprites sits up to half a pixel off, and only text
            text = near_text(explorer.figure)
            allowed = text | near_axes_edges(explorer.figure)
            assert not (difference.astype(bool) & ~allowed).any(), names[step % len(names)]
            # Half a pixel moves glyph edges: a few strong differences per glyph, so many
            # more where the text is dense, none of them away from text (1 to 2 % of the
            # text's pixels in these explorers).
            assert (difference > 128)[text].mean() < 0.03, names[step % len(names)]


@pytest.mark.parametrize("size", [(1, 1), (7, 3), (155, 46)])
def test_png_encoding_keeps_every_pixel(size):
    from helpers.rendering import _rgba_to_png

    width, height = size
    rgba = np.random.default_rng(0).integers(0, 256, (height, width, 4), dtype=np.uint8)
    image = Image.open(io.BytesIO(_rgba_to_png(rgba, size)))
    assert image.mode == "RGB" and image.size == size
    np.testing.assert_array_equal(np.asarray(image), rgba[..., :3])


def agg_text_sprite(s, prop, angle, dpi=100):
    """What Agg draws for a string in black on a clear canvas, cropped to its ink, and
    the offset of its top-left pixel from the anchor (the sprite's definition)."""
    from matplotlib.backends.backend_agg import RendererAgg

    width, height, _descent = RendererAgg(1, 1, dpi).get_text_width_height_descent(
        s, prop, False)
    reach = int(width + height) + 8
    canvas = RendererAgg(2 * reach, 2 * reach, dpi)
    gc = canvas.new_gc()
    gc.set_foreground((0, 0, 0, 1), isRGBA=True)
    canvas.draw_text(gc, reach, reach, s, prop, angle)
    gc.restore()
    alpha = np.asarray(canvas.buffer_rgba())[..., 3]
    rows, columns = np.nonzero(alpha)
    ink = alpha[rows.min():rows.max() + 1, columns.min():columns.max() + 1] / 255
    return ink, columns.min() - reach, rows.min() - reach


@pytest.mark.parametrize("angle", [0, 30, 45, 90])
@pytest.mark.parametrize("size", [8, 10, 12])
def test_a_sprite_made_from_kept_glyphs_is_what_agg_draws(size, angle):
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    from helpers.rendering import _SpriteTextRenderer

    sprites = _SpriteTextRenderer(RendererAgg(1, 1, 100))
    prop = FontProperties(size=size)
    for s in ["0.62", "journey", "latest sample after dropout (colour scale 0 to 2.50)",
              "query 'Your' (row 0): exp(-inf) = 0", "AV Wo fi −0.25 ≈ √d_k"]:
        coverage, left, top = sprites._render(s, prop, angle)
        expected, expected_left, expected_top = agg_text_sprite(s, prop, angle)
        assert (left, top) == (expected_left, expected_top), s
        assert coverage.shape[:2] == expected.shape, s
        # Where glyphs overlap, Agg blends them in 8-bit steps: a few levels apart.
        assert np.abs(coverage[..., 0] - expected).max() <= 5 / 255, s


def test_a_new_string_of_known_glyphs_rasterises_no_glyph():
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    import helpers.rendering
    from helpers.rendering import _SpriteTextRenderer

    sprites = _SpriteTextRenderer(RendererAgg(1, 1, 100))
    prop = FontProperties(size=11)
    helpers.rendering._GLYPH_RASTERS.clear()
    sprites._render("0123456789.", prop, 0)
    assert len(helpers.rendering._GLYPH_RASTERS) == 11  # one raster per glyph
    sprites._render("0.1234", prop, 0)
    sprites._render("98.765", prop, 0)
    assert len(helpers.rendering._GLYPH_RASTERS) == 11  # all of them kept, none new
