"""What several explorers' tests ask alike: checking that moves are blitted."""

from tools.explorer_step import step
from tools.full_draws import count_full_draws


def assert_steps_draw_in_place(explorer) -> None:
    """Once every control has moved (first moves may draw the whole figure: new tick
    labels, panels shown), moving them again three times draws no whole figure: every
    change is blitted into the picture."""
    for name in explorer.controls:
        step(explorer, name)
    full_draws = count_full_draws(explorer.renderer)
    for _ in range(3):
        for name in explorer.controls:
            step(explorer, name)
    assert full_draws == []
