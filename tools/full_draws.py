"""Counting the frames a ``FigureRenderer`` (helpers/rendering.py) draws in full, from the
outside: the helpers keep no counters for tests and benchmarks.

Shared by the widget tests and the latency benchmarks."""


def count_full_draws(renderer) -> list:
    """Spy on a renderer: the list returned gets an entry for every full draw it makes from
    now on. A full draw is known by the background it then keeps (the canvas's
    ``copy_from_bbox``, wrapped for this canvas only); drawing the canvas for any other
    reason (a test's own full draw, saving the figure) keeps none and is not counted."""
    backgrounds = []
    copy_from_bbox = renderer.canvas.copy_from_bbox

    def keep(bbox):
        backgrounds.append(copy_from_bbox(bbox))
        return backgrounds[-1]

    renderer.canvas.copy_from_bbox = keep
    return backgrounds
