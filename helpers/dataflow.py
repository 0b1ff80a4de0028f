"""The data-flow picture of causal self-attention, drawn at the start of each notebook.

``dataflow_figure(highlight=("mask",))`` returns a matplotlib Figure of the whole
pipeline, one box per step, with the steps a notebook is about highlighted:

    x -> W_q, W_k, W_v -> scores -> scale -> mask -> softmax -> dropout -> @ V -> context

By default the boxes follow one sequence of T tokens through one head; ``batched=True``
gives their shapes a batch dimension B; ``heads=True`` adds the steps of multi-head
attention (split into H heads of d_h = d_out / H features, merge, output projection);
``cache=True`` draws generation with a KV cache: T_new new tokens go in, their keys and
values join those of the earlier tokens in the cache (a step of its own, after the
projections and any split), their queries go past it, straight to the scores, which are
T_new × T_k, over every key so far; there is no dropout step (generation runs the model in
eval mode, where dropout does nothing); ``mask_label`` renames the mask box (a padding
mask, say).

The step names, in order, are ``DATAFLOW_STEPS`` for one head and ``MULTI_HEAD_STEPS``
with ``heads=True``, with ``CACHE_STEP`` inserted and "dropout" left out by ``cache=True``;
``dataflow_steps(heads=..., cache=...)`` returns the one that applies. The
figure is FIGURE_WIDTH wide with no text under 11 pt (helpers.plotting says why). It is
returned, never displayed: the notebook shows it.
"""

import math
from itertools import pairwise

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from helpers.plotting import new_figure

DATAFLOW_STEPS = ("input", "projections", "scores", "scale", "mask", "softmax", "dropout",
                  "weighted_sum", "context")
MULTI_HEAD_STEPS = ("input", "projections", "split", "scores", "scale", "mask", "softmax",
                    "dropout", "weighted_sum", "merge", "out_proj", "context")
HEAD_ONLY_STEPS = tuple(step for step in MULTI_HEAD_STEPS if step not in DATAFLOW_STEPS)
CACHE_STEP = "cache"  # with cache=True: after the projections (and the split into heads)

FIGURE_WIDTH = 8.5  # inches: 850 px at 100 dpi, the width the sizes below are chosen for
NAME_SIZE = 12  # pt, a box's step name
DETAIL_SIZE = 11  # pt, what the step computes: the smallest text of the figure
TITLE_SIZE = 13  # pt
MASK_LABEL_CHARS = 24  # the longest line mask_label may give a box

HIGHLIGHT_FACE = "#1f77b4"
HIGHLIGHT_TEXT = "white"
PLAIN_FACE = "#eeeeee"
PLAIN_EDGE = "#9e9e9e"
PLAIN_TEXT = "#303030"
ARROW_COLOUR = "#606060"

# Layout in inches (the axes are the whole figure, one data unit = one inch).
_BOX_WIDTH, _BOX_HEIGHT, _GAP = 1.47, 0.78, 0.24  # the narrowest box, and the gap between
_MAX_PER_ROW = 5
_USABLE_WIDTH = _MAX_PER_ROW * _BOX_WIDTH + (_MAX_PER_ROW - 1) * _GAP  # 8.31 of the 8.5
_TIGHT, _ROOMY = 0.1, 0.4  # inches of box beside its widest text (both sides): least, ideal
_BOTTOM, _ROW_GAP, _TITLE_SPACE, _NOTE_SPACE = 0.18, 0.66, 0.70, 0.36

_DEFAULT_MASK_LABEL = ("causal mask", "future → −∞")
# New queries are the last T_new of T_k tokens: the causal mask's last rows (notebook 09).
_CACHE_MASK_LABEL = ("causal mask", "aligned bottom-right")
_HEADS_NOTE = "H heads of d_h = d_out / H features each"
_CACHE_NOTE = "KV cache: the keys and values of earlier tokens; T_k = cached + T_new"
# With a cache, the two routes out of the projections: what is cached, what goes past it.
QUERY_ROUTE = "Q: not cached"
KEY_VALUE_ROUTE = "K, V"


def dataflow_steps(*, heads=False, cache=False) -> tuple:
    """The step names the figure draws, in pipeline order: ``DATAFLOW_STEPS`` for one
    head, ``MULTI_HEAD_STEPS`` with ``heads=True``; ``cache=True`` inserts ``CACHE_STEP``
    after the projections (after the split into heads, with ``heads=True``) and leaves out
    "dropout" (generation runs in eval mode, where dropout does nothing). Valid
    ``highlight`` names are these."""
    steps = MULTI_HEAD_STEPS if _as_flag(heads, "heads") else DATAFLOW_STEPS
    if not _as_flag(cache, "cache"):
        return steps
    after = steps.index("split" if heads else "projections") + 1
    steps = steps[:after] + (CACHE_STEP,) + steps[after:]
    return tuple(step for step in steps if step != "dropout")


def _as_flag(value, argument) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{argument} must be True or False, got {value!r}")
    return value


def _options(batched, heads, cache) -> str:
    return f"batched={batched}, heads={heads}, cache={cache}"


def _as_step_names(highlight, steps, options) -> tuple:
    """``highlight`` as a tuple of names from ``steps`` (a single string is one name)."""
    if isinstance(highlight, str):
        highlight = (highlight,)
    try:
        names = tuple(highlight)
    except TypeError:
        raise TypeError(
            f"highlight must be a tuple of step names such as ('mask',), got "
            f"{type(highlight).__name__}; valid names with {options}: {', '.join(steps)}"
        ) from None
    for name in names:
        if name not in steps:
            why = (" (a step of multi-head attention: pass heads=True)"
                   if name in HEAD_ONLY_STEPS else
                   " (the KV cache of generation: pass cache=True)" if name == CACHE_STEP
                   else "")
            raise ValueError(
                f"highlight got the step name {name!r}, which this figure does not draw"
                f"{why}; valid names with {options}, in order: {', '.join(steps)}"
            )
    return tuple(step for step in steps if step in names)  # pipeline order


def _as_mask_label(mask_label, cache=False) -> tuple:
    """``mask_label`` as (name, detail), two short one-line strings; None: the default
    (with a cache, the causal mask aligned bottom-right)."""
    if mask_label is None:
        return _CACHE_MASK_LABEL if cache else _DEFAULT_MASK_LABEL
    expected = (f"expected a pair of short strings (name, detail) such as "
                f"{_DEFAULT_MASK_LABEL!r}, each 1 to {MASK_LABEL_CHARS} characters on one line")
    if isinstance(mask_label, str) or not isinstance(mask_label, (tuple, list)):
        raise TypeError(f"mask_label must be a pair (name, detail), got "
                        f"{type(mask_label).__name__} {mask_label!r}; {expected}")
    if len(mask_label) != 2 or not all(isinstance(part, str) for part in mask_label):
        raise ValueError(f"mask_label got {mask_label!r}; {expected}")
    for part in mask_label:
        if not part.strip() or len(part) > MASK_LABEL_CHARS or "\n" in part:
            raise ValueError(f"mask_label got {part!r} ({len(part)} characters) in "
                             f"{mask_label!r}; {expected}")
    room = (_USABLE_WIDTH - 2 * _GAP) / 3 - _TIGHT  # a box of a row of three
    wide = _widest_text({"mask": tuple(mask_label)})
    if wide > room:
        raise ValueError(f"mask_label got {tuple(mask_label)!r}, a line {wide:.2f} inches wide "
                         f"as drawn; expected at most {room:.2f} inches (wide letters such as "
                         f"W take more room: shorten it)")
    return tuple(mask_label)


def _box_texts(steps, batched, heads, mask_label, cache=False) -> dict:
    """step -> (name, detail): what each box says; the shapes follow the options. With a
    cache, T_new tokens go in and their queries meet T_k keys: the cached ones and theirs."""
    batch = "B × " if batched else ""
    per_head = "H × " if heads else ""
    T, T_k = ("T_new", "T_k") if cache else ("T", "T")
    texts = {
        "input": ("input", f"x: {batch}{T} × d_in"),
        "projections": ("projections", "W_q, W_k, W_v"),
        "split": ("split heads", f"{batch}H × {T} × d_h"),
        CACHE_STEP: ("KV cache", "earlier K, V + new"),
        "scores": ("scores", f"Q Kᵀ: {batch}{per_head}{T} × {T_k}"),
        "scale": ("scale", "÷ √d_h" if heads else "÷ √d_k"),
        "mask": mask_label,
        "softmax": ("softmax", "rows sum to 1"),
        "dropout": ("dropout", "training only"),
        "weighted_sum": ("weighted sum", "weights @ V"),
        "merge": ("merge heads", f"{batch}{T} × d_out"),
        "out_proj": ("out_proj", "W_o mixes heads"),
        "context": ("context", f"{batch}{T} × d_out"),
    }
    return {step: texts[step] for step in steps}


def _widest_text(box_texts) -> float:
    """Width in inches of the widest line any box holds, as drawn at 100 dpi."""
    scratch = new_figure(figsize=(FIGURE_WIDTH, 1), dpi=100)
    renderer = scratch.canvas.get_renderer()
    lines = [(text, size, weight) for name, detail in box_texts.values()
             for text, size, weight in ((name, NAME_SIZE, "bold"), (detail, DETAIL_SIZE, "normal"))]
    return max(scratch.text(0, 0, text, fontsize=size, fontweight=weight)
               .get_window_extent(renderer).width for text, size, weight in lines) / 100


def _layout(box_texts) -> tuple:
    """(box width, rows of steps): as many boxes a row as fit their text, at most five;
    rows as even as they can be (twelve steps: three rows of four); boxes as wide as the
    row allows, up to a comfortable margin around the text."""
    widest = _widest_text(box_texts)
    least = max(_BOX_WIDTH, widest + _TIGHT)
    fits = max(n for n in range(1, _MAX_PER_ROW + 1)
               if n * least + (n - 1) * _GAP <= _USABLE_WIDTH + 1e-9)
    steps = list(box_texts)
    per_row = math.ceil(len(steps) / math.ceil(len(steps) / fits))
    room = (_USABLE_WIDTH - (per_row - 1) * _GAP) / per_row
    width = max(least, min(room, widest + _ROOMY))
    return width, [tuple(steps[i:i + per_row]) for i in range(0, len(steps), per_row)]


def _listed(names) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _title(lit, steps, box_texts, batched, heads, cache=False) -> str:
    """Two lines: what is drawn, then what is highlighted (the shorter way round when
    most steps are), short enough to fit the width."""
    what = "Multi-head causal self-attention" if heads else "Causal self-attention"
    on = " on a batch" if batched else ""
    if cache:
        start = f"{what}{on} with a KV cache, one step of generation\n"
    else:
        start = f"{what}{on}, step by step\n"
    if not lit:
        return f"{start}No step highlighted"
    if len(lit) == len(steps):
        return f"{start}Highlighted: every step"
    if len(lit) > len(steps) / 2:
        rest = [box_texts[step][0] for step in steps if step not in lit]
        return f"{start}Highlighted: all but {_listed(rest)}"
    return f"{start}Highlighted: {_listed([box_texts[step][0] for step in lit])}"


def dataflow_figure(highlight=(), *, batched=False, heads=False, cache=False,
                    mask_label=None):
    """The pipeline x -> projections -> scores -> scale -> mask -> softmax -> dropout ->
    weighted sum -> context as a Figure, the steps named in ``highlight`` (e.g.
    ``("mask",)``) drawn in colour and named in the title.

    ``batched=True``: the shapes carry the batch dimension (B × T × d_in, ...).
    ``heads=True``: adds the steps "split" (B × H × T × d_h, d_h = d_out / H), "merge" and
    "out_proj" (the output projection W_o); only then are they valid highlight names.
    ``cache=True``: one step of generation with a KV cache: T_new new tokens, whose keys
    and values join the cache (the step "cache", a valid highlight name only then) while
    their queries go past it (a second route from the step before the cache to the scores,
    labelled ``QUERY_ROUTE``; the cache's own route ``KEY_VALUE_ROUTE``), and scores over
    T_k keys, Q Kᵀ: T_new × T_k; the mask box says the causal mask is aligned bottom-right,
    no dropout step (eval mode), and a line under the boxes says what the cache holds.
    ``mask_label=(name, detail)``: the mask box's two lines instead of ("causal mask",
    "future → −∞"), each at most ``MASK_LABEL_CHARS`` characters.

    Each step's box and its two texts carry the step's name as their gid
    (``artist.get_gid()``), in pipeline order; the title's gid is "title", that of the
    line under the boxes (defining d_h and T_k, when shown) "note"; with a cache, the two
    route labels' gids are "query_route" and "key_value_route".
    Its label (``figure.get_label()``, the alt text) names every box in order. Raises
    ValueError for a name this figure does not draw, TypeError or ValueError for a
    malformed argument."""
    batched, heads = _as_flag(batched, "batched"), _as_flag(heads, "heads")
    cache = _as_flag(cache, "cache")
    steps = dataflow_steps(heads=heads, cache=cache)
    lit = _as_step_names(highlight, steps, _options(batched, heads, cache))
    box_texts = _box_texts(steps, batched, heads, _as_mask_label(mask_label, cache), cache)
    box_width, rows = _layout(box_texts)

    notes = [note for note, shown in ((_HEADS_NOTE, heads), (_CACHE_NOTE, cache)) if shown]
    note_space = _NOTE_SPACE * len(notes)
    row_y = [note_space + _BOTTOM + (len(rows) - 1 - r) * (_BOX_HEIGHT + _ROW_GAP)
             for r in range(len(rows))]  # bottom of each row's boxes, the first row on top
    height = row_y[0] + _BOX_HEIGHT + _TITLE_SPACE
    fig = new_figure(figsize=(FIGURE_WIDTH, height))
    ax = fig.subplots()
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)
    ax.set_xlim(0, FIGURE_WIDTH)
    ax.set_ylim(0, height)
    ax.set_axis_off()

    row_width = len(rows[0]) * box_width + (len(rows[0]) - 1) * _GAP
    left = (FIGURE_WIDTH - row_width) / 2
    corners = {}
    for row, y in zip(rows, row_y, strict=True):
        for column, step in enumerate(row):
            x = left + column * (box_width + _GAP)
            on = step in lit
            box = FancyBboxPatch(
                (x, y), box_width, _BOX_HEIGHT, boxstyle="round,pad=0,rounding_size=0.08",
                facecolor=HIGHLIGHT_FACE if on else PLAIN_FACE,
                edgecolor="black" if on else PLAIN_EDGE, linewidth=2.2 if on else 1.0,
                gid=step)
            ax.add_patch(box)
            name, detail = box_texts[step]
            colour = HIGHLIGHT_TEXT if on else PLAIN_TEXT
            centre_x, centre_y = x + box_width / 2, y + _BOX_HEIGHT / 2
            ax.text(centre_x, centre_y + 0.15, name, fontsize=NAME_SIZE, fontweight="bold",
                    color=colour, ha="center", va="center", gid=step)
            ax.text(centre_x, centre_y - 0.17, detail, fontsize=DETAIL_SIZE, color=colour,
                    ha="center", va="center", gid=step)
            corners[step] = (x, y)
    # Arrows along each row, then from the end of each row to the start of the next.
    arrow = dict(arrowstyle="-|>", mutation_scale=16, color=ARROW_COLOUR, linewidth=1.6)
    for row in rows:
        for before, after in pairwise(row):
            (x0, y0), (x1, _) = corners[before], corners[after]
            ax.add_patch(FancyArrowPatch((x0 + box_width, y0 + _BOX_HEIGHT / 2),
                                         (x1, y0 + _BOX_HEIGHT / 2), **arrow))
    for upper, lower in pairwise(rows):
        (x_end, y_end), (x_next, y_next) = corners[upper[-1]], corners[lower[0]]
        turn_y = (y_end + y_next + _BOX_HEIGHT) / 2  # halfway between the rows
        start_x, end_x = x_end + box_width / 2, x_next + box_width / 2
        ax.plot([start_x, start_x, end_x], [y_end, turn_y, turn_y], color=ARROW_COLOUR,
                linewidth=arrow["linewidth"], solid_joinstyle="miter")
        ax.add_patch(FancyArrowPatch((end_x, turn_y), (end_x, y_next + _BOX_HEIGHT),
                                     **arrow))
    if cache:
        _draw_query_route(ax, corners, steps, rows, box_width, arrow)
    title = _title(lit, steps, box_texts, batched, heads, cache)
    ax.text(left, height - 0.1, title, fontsize=TITLE_SIZE, ha="left", va="top", gid="title")
    if notes:
        ax.text(left, note_space / 2, "\n".join(notes), fontsize=DETAIL_SIZE, color=PLAIN_TEXT,
                ha="left", va="center", linespacing=1.6, gid="note")
    # What a screen reader says for the picture (helpers.plotting.figure_description).
    pipeline = " → ".join(" ".join(box_texts[step]) for step in steps)
    title = ". ".join(line.strip() for line in title.splitlines())
    cache_note = (f" The queries go past the cache, straight to the scores. {_CACHE_NOTE}."
                  if cache else "")
    fig.set_label(f"{title}. The attention pipeline: {pipeline}.{cache_note}")
    return fig


def _draw_query_route(ax, corners, steps, rows, box_width, arrow) -> None:
    """Only keys and values are cached: the queries leave the step before the cache (the
    projections, or the split into heads) by a route of their own to the scores. The
    layouts put the cache at a row's end or start, so the route branches off the line
    that joins the two rows: down from the step before the cache to that line (the cache
    ends a row), or from that line down into the scores (the cache starts a row)."""
    before = steps[steps.index(CACHE_STEP) - 1]
    row = next(row for row in rows if CACHE_STEP in row)
    index = rows.index(row)
    if row[-1] == CACHE_STEP and before in row:  # the scores start the next row
        upper, lower = row, rows[index + 1]
    elif row[0] == CACHE_STEP and "scores" in row:  # the step before ends the row above
        upper, lower = rows[index - 1], row
    else:
        raise ValueError(f"the queries' route is drawn only when the cache ends or starts a "
                         f"row; got the row {row}")
    y_upper, y_lower = corners[upper[0]][1], corners[lower[0]][1]
    turn_y = (y_upper + y_lower + _BOX_HEIGHT) / 2  # the level of the line joining the rows
    centre = {step: corners[step][0] + box_width / 2 for step in (before, CACHE_STEP, "scores")}
    if upper is row:  # down from the step before the cache to the joining line
        ax.plot([centre[before]] * 2, [y_upper, turn_y], color=ARROW_COLOUR,
                linewidth=arrow["linewidth"])
        label_y = (y_upper + turn_y) / 2
    else:  # from the joining line down into the scores
        ax.add_patch(FancyArrowPatch((centre["scores"], turn_y),
                                     (centre["scores"], y_lower + _BOX_HEIGHT), **arrow))
        label_y = (turn_y + y_lower + _BOX_HEIGHT) / 2
    query_x = centre[before] if upper is row else centre["scores"]
    for x, text, gid in ((query_x, QUERY_ROUTE, "query_route"),
                         (centre[CACHE_STEP], KEY_VALUE_ROUTE, "key_value_route")):
        ax.text(x + 0.08, label_y, text, fontsize=DETAIL_SIZE, color=PLAIN_TEXT,
                ha="left", va="center", gid=gid)
