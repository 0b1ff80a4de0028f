"""Every explorer's picture is laid out so that it can be read: no text outside the figure,
none over a colour bar, an Axes it does not belong to, or another text; at the start and
after every move of every control (``tests.figures.layout_problems`` says what counts)."""

import pytest

from tests.figures import layout_problems
from tools import course
from tools.explorer_step import step

MOVES_PER_CONTROL = 4  # each control moved this many steps, one after another


@pytest.mark.slow
@pytest.mark.parametrize("notebook", course.notebooks(), ids=lambda notebook: notebook.name)
def test_no_text_is_cut_off_or_overlaps_at_the_start_and_after_every_move(notebook):
    explorer = notebook.explorer_factory()()
    problems = {f"at the start: {problem}" for problem in layout_problems(explorer.figure)}
    for name in explorer.controls:
        for move in range(1, MOVES_PER_CONTROL + 1):
            step(explorer, name)
            problems |= {f"after {name} moved {move} step(s): {problem}"
                         for problem in layout_problems(explorer.figure)}
    assert not problems, "\n".join(sorted(problems))
