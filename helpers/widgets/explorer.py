"""FigureExplorer: controls above one figure, updated in place; the shared look."""

import functools
import html

import ipywidgets as widgets
from IPython.display import Image as IPythonImage

from helpers.plotting import figure_description
from helpers.rendering import FigureRenderer
from helpers.threads import one_thread

# Given as dicts, so that each control gets a style and a layout of its own (widgets too):
# an explorer closes its own when it is closed, and no other explorer's.
CONTROL_STYLE = {"description_width": "initial"}
CONTROL_LAYOUT = {"width": "auto", "min_width": "260px"}
# Every explorer carries this CSS class (browser tests find explorers by it) and this
# style: controls large enough to read on a projector.
EXPLORER_CLASS = "course-explorer"
EXPLORER_CSS = f"""<style>
.{EXPLORER_CLASS} {{
  --jp-widgets-font-size: 16px;
  --jp-widgets-inline-height: 34px;
  --jp-widgets-slider-handle-size: 20px;
}}
.{EXPLORER_CLASS} .widget-label, .{EXPLORER_CLASS} .widget-readout,
.{EXPLORER_CLASS} select, .{EXPLORER_CLASS} button {{ font-size: 16px; }}
.{EXPLORER_CLASS} .widget-checkbox input {{ width: 20px; height: 20px; }}
.{EXPLORER_CLASS} > .widget-hbox {{ gap: 0.5em 2em; flex-wrap: wrap; }}
.{EXPLORER_CLASS} .slider-container {{ min-width: 200px; }}
</style>"""
# What a notebook shows for an explorer where the widget cannot be drawn: before its cell
# has run (the widget state is not there), in RISE, on GitHub. ipywidgets 7 and 8 both
# show ``repr(widget)`` as the text/plain fallback of a widget's output, cut at 110
# characters; a VBox's repr would spell out every child, CSS first.
PLACEHOLDER = "Explorer: run this cell to see its controls and picture."


class FigureExplorer(widgets.VBox):
    """Controls above a picture: compute what to show from the controls, then draw it.

    ``controls`` maps a name to a value widget (slider, dropdown, checkbox, ...) or to a
    ``Button``. On every change, ``compute(**values)`` receives every control's value by
    name (for a button, how many times it was clicked: a "resample" button, say) and
    returns a *view*: what the picture shows (numbers, strings), computed without any
    figure, so that it can be tested as plain data. A view's ``notice`` attribute, if
    any, is shown above the picture as guidance (e.g. "choose a d_out that H divides").

    ``drawing`` holds the figure, ``drawing.figure``, and draws views on it in place:

    - ``drawing.draw(view)`` updates the figure's artists, and returns the view's
      *layout*: a hashable value that changes whenever something changes that is not
      animated (new tick labels, a panel shown or hidden), or None if nothing ever does;
    - ``drawing.animated`` lists the artists that ``draw`` changes from view to view,
      and any drawn over them (a line over bars).

    The picture is rendered into an ``ipywidgets.Image`` by blitting
    (``helpers.rendering.FigureRenderer``): the figure is drawn in full, without its
    animated artists, for a new layout only, and each picture draws the animated
    artists over that background. An error raised on the way is shown as a message in
    the widget (and kept in ``last_error``) instead of a traceback lost in the log; the
    last good picture stays, and the next one is drawn in full.

    The picture is drawn at ``dpi`` (100: the type scale of ``helpers.plotting`` is made
    for it): a figure at most ``FIGURE_WIDTH`` inches wide with no text under
    ``TEXT_SIZE`` stays readable in a notebook column and on a slide.
    """

    def __init__(self, controls: dict, compute, drawing, *, dpi: int = 100):
        self.controls = controls
        self.compute = compute
        self.drawing = drawing
        self.figure = drawing.figure
        self.view = None  # what the picture shows now
        self.renderer = FigureRenderer(self.figure, dpi=dpi)
        self.image = widgets.Image(format="png")
        self.message = widgets.HTML()
        self.message.add_class(f"{EXPLORER_CLASS}-message")
        self.notice = widgets.HTML()  # the view's notice: guidance, not an error
        self.notice.add_class(f"{EXPLORER_CLASS}-notice")
        self.last_error = None
        self.clicks = {name: 0 for name, control in controls.items()
                       if isinstance(control, widgets.Button)}
        super().__init__([widgets.HTML(EXPLORER_CSS), widgets.HBox(list(controls.values())),
                          self.message, self.notice, self.image])
        self.add_class(EXPLORER_CLASS)
        for name, control in controls.items():
            if name in self.clicks:
                control.on_click(lambda _button, name=name: self._on_click(name))
            else:
                control.observe(self._on_change, names="value")
        self.refresh()
        # Lay the figure out once; later pictures keep it and render faster.
        self.figure.set_layout_engine("none")

    def __repr__(self) -> str:
        return PLACEHOLDER

    def close(self):
        """Close the explorer's widgets and let go of its figure and its view. ipywidgets
        keeps every widget until it is closed, and IPython's output history keeps what a
        cell showed: without this, every explorer built in a kernel would stay in memory,
        figure and all, for as long as the kernel runs. A closed explorer disappears from the
        notebook (its views are removed) and draws no more. (Its figure is not pyplot's,
        ``helpers.plotting.new_figure``: there is nothing to close there.)"""
        for widget in [*self.controls.values(), *self.children]:
            for part in (widget, widget.layout, getattr(widget, "style", None)):
                if part is not None:  # a box has no style
                    part.close()
        self.layout.close()
        super().close()
        if self.renderer is not None:  # not closed before
            # Its memory, freed now: a figure is garbage in reference cycles, which
            # Python's collector may reach only a dozen builds later.
            self.figure.clear()
            self.renderer.close()
        self.drawing = self.figure = self.renderer = self.view = self.compute = None

    def __del__(self):
        """Garbage (or Python exiting): close the box alone, as ipywidgets does any widget.
        Its figure goes with it, and while Python exits, ``close`` could not free it."""
        super().close()

    def values(self) -> dict:
        return {name: self.clicks[name] if name in self.clicks else control.value
                for name, control in self.controls.items()}

    def picture(self):
        """What the explorer shows now, as a static picture for the notebook (read without
        a running kernel, or exported as slides): its last PNG, not drawn again."""
        description = (f"{figure_description(self.figure)} (A picture of the explorer: run "
                       "the notebook to move its controls.)")
        return IPythonImage(data=bytes(self.image.value), format="png",
                            metadata={"alt": description})

    def _on_change(self, _change):
        self.refresh()

    def _on_click(self, name):
        self.clicks[name] += 1
        self.refresh()

    def refresh(self):
        """Compute and draw from the controls' current values, and show the new image."""
        if self.drawing is None:  # closed
            return
        try:
            with one_thread():  # tiny tensors: see helpers.threads
                view = self.compute(**self.values())
            layout = self.drawing.draw(view)
            png = self.renderer.png(self.drawing.animated, layout)
        except Exception as error:  # shown to the learner, not swallowed
            self.last_error = error
            self.message.value = (
                f"<span style='color:#b00020'>{html.escape(type(error).__name__)}: "
                f"{html.escape(str(error))}</span>"
            )
            return
        self.view = view
        self.last_error = None
        self.message.value = ""
        notice = getattr(view, "notice", "")
        self.notice.value = f"<b>{html.escape(notice)}</b>" if notice else ""
        self.image.value = png


def closes_the_one_before(factory):
    """Make an explorer factory close the explorer it built before (``FigureExplorer.close``)
    once it has built a new one. Running a notebook cell again builds a new explorer; the
    old one, no longer shown, would otherwise stay in memory as long as the kernel runs.

    So one explorer of a kind is open at a time: no notebook shows two of one kind at
    once. The old one disappears from the cell that showed it (ipywidgets removes a
    closed widget's views from the page) until that cell runs again."""
    last = None  # the explorer built last

    @functools.wraps(factory)
    def build(*args, **kwargs):
        nonlocal last
        explorer = factory(*args, **kwargs)  # if this fails, the old one stays open
        if last is not None:
            last.close()
        last = explorer
        return explorer

    return build
