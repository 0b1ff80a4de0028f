"""Every explorer walked as a learner moves it, and looked at after every step.

One walk per explorer feeds every check here (building and walking an explorer is the
slow part): each control moved MOVES_PER_CONTROL steps in turn, every position of most
controls; then steps of controls in a shuffled order, the same on every machine, so that
layouts come back with other contents in them. After every step: no error; the picture
is what a full draw of the figure shows, every pixel (the renderer blits); no text cut
off or overlapping (``tests.figures.layout_problems``); every text readable in a notebook
and on a slide (``tests.type_scale``). Over the walk: each control's first step changes
the picture, and the global random state is left as it was.
"""

import random
from dataclasses import dataclass, field

import pytest
import torch

from tests.figures import assert_shows_a_full_draw, layout_problems
from tests.type_scale import COLUMN_WIDTH, EXPLORER_PICTURE_HEIGHT, drawn_texts, too_small
from tools.course import explorers
from tools.explorer_step import step

pytestmark = pytest.mark.slow

EXPLORERS = explorers()
MOVES_PER_CONTROL = 4  # each control moved this many steps, one after another
SHUFFLED_STEPS_PER_CONTROL = 3  # then this many steps per control, controls shuffled


@dataclass
class Walk:
    """What was seen on an explorer's walk, step by step ("at the start", "after d_k moved
    2 step(s)", ...)."""

    width: float = 0.0  # px, the picture as drawn
    height: float = 0.0
    texts_at_start: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    frames_unlike_a_full_draw: list = field(default_factory=list)
    layout_problems: list = field(default_factory=list)
    texts_too_small: list = field(default_factory=list)
    controls_that_left_the_picture: list = field(default_factory=list)
    random_state_kept: bool = False


def look(explorer, walk: Walk, when: str) -> None:
    """Check the explorer's picture as it is now, and note what is wrong."""
    if explorer.last_error is not None:
        walk.errors.append(f"{when}: {explorer.last_error!r}")
    try:  # draws the figure in full: the layout below reads that draw
        assert_shows_a_full_draw(explorer.image.value, explorer.figure, when)
    except AssertionError as error:
        walk.frames_unlike_a_full_draw.append(str(error))
    walk.layout_problems += [f"{when}: {problem}"
                             for problem in layout_problems(explorer.figure, drawn=True)]
    walk.texts_too_small += [f"{when}: {problem}"
                             for problem in too_small(explorer.figure, explorer.figure.dpi)]


@pytest.fixture(scope="module", params=list(EXPLORERS))
def walk(request) -> Walk:
    name = request.param
    walked = Walk()
    state = torch.get_rng_state()
    explorer = EXPLORERS[name]()
    walked.width, walked.height = explorer.figure.get_size_inches() * explorer.figure.dpi
    walked.texts_at_start = drawn_texts(explorer.figure)
    look(explorer, walked, "at the start")
    controls = list(explorer.controls)
    for control in controls:
        for move in range(1, MOVES_PER_CONTROL + 1):
            before = bytes(explorer.image.value)
            step(explorer, control)
            if move == 1 and bytes(explorer.image.value) == before:
                walked.controls_that_left_the_picture.append(control)
            look(explorer, walked, f"after {control} moved {move} step(s)")
    shuffled = random.Random(name).choices(controls,
                                           k=SHUFFLED_STEPS_PER_CONTROL * len(controls))
    for number, control in enumerate(shuffled, start=1):
        step(explorer, control)
        look(explorer, walked, f"after shuffled step {number} ({control})")
    walked.random_state_kept = torch.equal(torch.get_rng_state(), state)
    explorer.close()
    return walked


def test_no_step_shows_an_error(walk):
    assert walk.errors == []


def test_every_picture_is_what_a_full_draw_shows(walk):
    assert walk.frames_unlike_a_full_draw == []


def test_no_text_is_cut_off_or_overlaps_at_the_start_and_after_every_step(walk):
    assert walk.layout_problems == [], "\n".join(walk.layout_problems)


def test_every_text_is_readable_in_a_notebook_and_on_a_slide(walk):
    assert walk.texts_at_start, "found no text to measure"
    assert walk.texts_too_small == []


def test_the_picture_fits_a_slide_below_its_code(walk):
    assert walk.height <= EXPLORER_PICTURE_HEIGHT
    assert walk.width <= COLUMN_WIDTH


def test_every_control_changes_the_picture(walk):
    assert walk.controls_that_left_the_picture == []


def test_building_and_walking_leaves_the_global_random_state_alone(walk):
    assert walk.random_state_kept
