"""The data-flow picture of causal self-attention, drawn at the start of each notebook.

``dataflow_figure(highlight=("mask",))`` returns a matplotlib Figure of the whole
pipeline, one box per step, with the steps a notebook is about highlighted:

    x -> W_q, W_k, W_v -> scores -> scale -> mask -> softmax -> dropout -> @ V -> context

The step names, in order, are ``DATAFLOW_STEPS``. The figure is 8.5 inches wide with no
text under 11 pt, so shown 850 px wide (8.5 inches at matplotlib's 100 dpi) on a
projector it stays readable. It is returned, never displayed: the notebook shows it.
"""

from itertools import pairwise

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

DATAFLOW_STEPS = ("input", "projections", "scores", "scale", "mask", "softmax", "dropout",
                  "weighted_sum", "context")

# What each box says: the step's name, then what it computes (for one sequence of T tokens).
_BOX_TEXT = {
    "input": ("input", "x: T × d_in"),
    "projections": ("projections", "W_q, W_k, W_v"),
    "scores": ("scores", "Q Kᵀ: T × T"),
    "scale": ("scale", "÷ √d_k"),
    "mask": ("causal mask", "future → −∞"),
    "softmax": ("softmax", "rows sum to 1"),
    "dropout": ("dropout", "training only"),
    "weighted_sum": ("weighted sum", "weights @ V"),
    "context": ("context", "T × d_out"),
}

FIGURE_WIDTH = 8.5  # inches: 850 px at 100 dpi, the width the sizes below are chosen for
NAME_SIZE = 12  # pt, a box's step name
DETAIL_SIZE = 11  # pt, what the step computes: the smallest text of the figure
TITLE_SIZE = 13  # pt

HIGHLIGHT_FACE = "#1f77b4"
HIGHLIGHT_TEXT = "white"
PLAIN_FACE = "#eeeeee"
PLAIN_EDGE = "#9e9e9e"
PLAIN_TEXT = "#303030"
ARROW_COLOUR = "#606060"

# Layout in inches (the axes are the whole figure, one data unit = one inch).
_BOX_WIDTH, _BOX_HEIGHT, _GAP = 1.47, 0.78, 0.24
_ROWS = (DATAFLOW_STEPS[:5], DATAFLOW_STEPS[5:])  # two rows, read left to right
_ROW_Y = (1.62, 0.18)  # bottom of each row's boxes
_HEIGHT = 3.1


def _as_step_names(highlight) -> tuple:
    """``highlight`` as a tuple of valid step names (a single string is one name)."""
    if isinstance(highlight, str):
        highlight = (highlight,)
    try:
        names = tuple(highlight)
    except TypeError:
        raise TypeError(
            f"highlight must be a tuple of step names such as ('mask',), got "
            f"{type(highlight).__name__}; valid names: {', '.join(DATAFLOW_STEPS)}"
        ) from None
    for name in names:
        if name not in DATAFLOW_STEPS:
            raise ValueError(
                f"highlight got an unknown step name {name!r}; valid names, in order: "
                f"{', '.join(DATAFLOW_STEPS)}"
            )
    return tuple(step for step in DATAFLOW_STEPS if step in names)  # pipeline order


def _listed(steps) -> str:
    names = [_BOX_TEXT[step][0] for step in steps]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _title(steps) -> str:
    """Two lines; the second names what is highlighted (the shorter way round when most
    are), short enough to fit the width."""
    start = "Causal self-attention, step by step\n"
    if not steps:
        return f"{start}No step highlighted"
    if len(steps) == len(DATAFLOW_STEPS):
        return f"{start}Highlighted: every step"
    if len(steps) > len(DATAFLOW_STEPS) / 2:
        rest = [step for step in DATAFLOW_STEPS if step not in steps]
        return f"{start}Highlighted: all but {_listed(rest)}"
    return f"{start}Highlighted: {_listed(steps)}"


def dataflow_figure(highlight=()):
    """The pipeline x -> projections -> scores -> scale -> mask -> softmax -> dropout ->
    weighted sum -> context as a Figure, the steps named in ``highlight`` (names from
    ``DATAFLOW_STEPS``, e.g. ``("mask",)``) drawn in colour and named in the title.

    The Figure carries ``step_boxes`` (step name -> its box patch), ``step_texts`` (step
    name -> its two Text artists), ``title_text`` (the title's Text) and ``highlighted``
    (the highlighted names, in pipeline order). Raises ValueError for an unknown step name."""
    steps = _as_step_names(highlight)
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, _HEIGHT))
    plt.close(fig)  # the caller shows it; pyplot keeps no reference
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)
    ax.set_xlim(0, FIGURE_WIDTH)
    ax.set_ylim(0, _HEIGHT)
    ax.set_axis_off()

    fig.step_boxes, fig.step_texts, fig.highlighted = {}, {}, steps
    row_width = len(_ROWS[0]) * _BOX_WIDTH + (len(_ROWS[0]) - 1) * _GAP
    left = (FIGURE_WIDTH - row_width) / 2
    centres = {}
    for row, y in zip(_ROWS, _ROW_Y, strict=True):
        for column, step in enumerate(row):
            x = left + column * (_BOX_WIDTH + _GAP)
            lit = step in steps
            box = FancyBboxPatch(
                (x, y), _BOX_WIDTH, _BOX_HEIGHT, boxstyle="round,pad=0,rounding_size=0.08",
                facecolor=HIGHLIGHT_FACE if lit else PLAIN_FACE,
                edgecolor="black" if lit else PLAIN_EDGE, linewidth=2.2 if lit else 1.0,
                gid=step)
            ax.add_patch(box)
            name, detail = _BOX_TEXT[step]
            colour = HIGHLIGHT_TEXT if lit else PLAIN_TEXT
            centre_x, centre_y = x + _BOX_WIDTH / 2, y + _BOX_HEIGHT / 2
            fig.step_texts[step] = (
                ax.text(centre_x, centre_y + 0.15, name, fontsize=NAME_SIZE,
                        fontweight="bold", color=colour, ha="center", va="center", gid=step),
                ax.text(centre_x, centre_y - 0.17, detail, fontsize=DETAIL_SIZE,
                        color=colour, ha="center", va="center", gid=step),
            )
            fig.step_boxes[step] = box
            centres[step] = (x, y)
    # Arrows along each row, then from the end of the first row to the start of the second.
    arrow = dict(arrowstyle="-|>", mutation_scale=16, color=ARROW_COLOUR, linewidth=1.6)
    for row in _ROWS:
        for before, after in pairwise(row):
            (x0, y0), (x1, _) = centres[before], centres[after]
            ax.add_patch(FancyArrowPatch((x0 + _BOX_WIDTH, y0 + _BOX_HEIGHT / 2),
                                         (x1, y0 + _BOX_HEIGHT / 2), **arrow))
    (x_end, y_end), (x_next, y_next) = centres[_ROWS[0][-1]], centres[_ROWS[1][0]]
    turn_y = (y_end + y_next + _BOX_HEIGHT) / 2  # halfway between the rows
    start_x, end_x = x_end + _BOX_WIDTH / 2, x_next + _BOX_WIDTH / 2
    ax.plot([start_x, start_x, end_x], [y_end, turn_y, turn_y], color=ARROW_COLOUR,
            linewidth=arrow["linewidth"], solid_joinstyle="miter")
    ax.add_patch(FancyArrowPatch((end_x, turn_y), (end_x, y_next + _BOX_HEIGHT), **arrow))
    fig.title_text = ax.text(left, _HEIGHT - 0.1, _title(steps), fontsize=TITLE_SIZE,
                             ha="left", va="top")
    return fig
