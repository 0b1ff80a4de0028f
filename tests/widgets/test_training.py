"""Training's pictures: the live monitor of a training run, and the loss curves."""

import pytest

from helpers.gpt.training import train
from helpers.widgets.training import TrainingMonitor, plot_losses
from tests.figures import assert_shows_a_full_draw
from tests.gpt.support import SMALL_TASK, small_model


def test_monitor_shows_progress_and_the_curve():
    monitor = TrainingMonitor(10, baselines={"uniform guess": 2.08}, redraw_every=5)
    first_picture = monitor.image.value
    losses = train(small_model(), SMALL_TASK, steps=10, batch_size=4, monitor=monitor)
    assert monitor.progress.value == 10 and monitor.losses == losses
    assert list(monitor.line.get_ydata()) == losses
    assert monitor.image.value != first_picture
    assert monitor.status.value == f"loss {losses[-1]:.3f}"
    assert_shows_a_full_draw(monitor.image.value, monitor.figure)  # the curve blitted


def test_monitor_moves_its_bar_at_most_a_hundred_times_and_ends_on_the_last_step():
    monitor = TrainingMonitor(1234, redraw_every=1000)
    moves = []
    monitor.progress.observe(lambda change: moves.append(change["new"]), names="value")
    for step in range(1, 1235):
        monitor.update(step, 1.0)
    assert len(moves) <= 101 and moves[-1] == 1234
    assert monitor.progress.description == "step 1234"


def test_monitor_shows_a_short_sentence_where_it_cannot_be_drawn():
    """The text/plain fallback, saved in the notebook and shown without a kernel, is one
    sentence, not the widget tree: ipywidgets 8 (``_repr_mimebundle_``) and 7
    (``_ipython_display_``) both publish repr(widget) there, cut at 110 characters."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    monitor = TrainingMonitor(600, baselines={"uniform guess": 2.77})
    InteractiveShell.instance()
    with capture_output() as captured:
        display(monitor)
    [output] = captured.outputs
    text = output.data["text/plain"]
    assert text == repr(monitor) == ("Training monitor for 600 steps: run this cell to see its "
                                     "progress bar and loss curve.")
    assert len(text) <= 110 and "children" not in text
    assert "application/vnd.jupyter.widget-view+json" in output.data  # still the live widget


def test_plot_losses_draws_each_run_and_each_baseline():
    from matplotlib.figure import Figure

    figure = plot_losses({"masked": [2.0, 1.0, 0.5], "unmasked": [2.0, 0.1]},
                         {"uniform guess": 2.08, "best possible": 0.4})
    assert isinstance(figure, Figure)
    (ax,) = figure.axes  # one plot holds every curve
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert lines["masked"] == [2.0, 1.0, 0.5] and lines["unmasked"] == [2.0, 0.1]
    assert lines["uniform guess (2.08)"] == [2.08, 2.08]
    assert ax.get_xlim() == (0, 3)
    with pytest.raises(ValueError, match="curves must map at least one label"):
        plot_losses({})


def test_plot_losses_tells_close_baselines_apart_and_points_to_one_off_the_chart():
    figure = plot_losses({"masked": [2.0, 1.0]},
                         {"uniform guess": 2.77, "bigram counts": 2.75, "past only": 5.73},
                         max_loss=3.0)
    (ax,) = figure.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    uniform, bigram = lines["uniform guess (2.77)"], lines["bigram counts (2.75)"]
    assert uniform.get_color() != bigram.get_color()
    assert uniform.get_linestyle() != bigram.get_linestyle()
    assert "past only (5.73)" not in lines  # above the chart: not a line
    [arrow] = ax.texts
    assert arrow.get_text() == "past only (5.73): off the chart"
