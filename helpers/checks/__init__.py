"""Exercise checks: is the learner's answer right, and if not, what is the likely mistake?

A notebook's check cell is one call, ``check_blocked_positions(blocked_positions)``: the
check runs the learner's function (or class) on inputs of its own, at sizes unlike the
notebook's, and returns a ``Feedback`` shown as ``Correct: ...``, ``Not attempted yet: ...``
while the stub still raises ``NotImplementedError``, or ``Incorrect: ...`` naming the
mistake it recognised. Help comes in levels: ``check_blocked_positions.hint()`` nudges
further, and the exercise's ``%load`` line holds the solution. A check never raises, never
shows the expected tensor or the fix line, never changes the learner's tensors or modules,
and gives the global random generator back its state.

Split by role: ``feedback`` (``Feedback`` and the comparison machinery every check
shares), then one module per notebook, imported from there
(``from helpers.checks.dropout import check_my_dropout``). The course's manifest,
course.toml, lists every exercise with its check and its solution file under
``solutions/``.
"""

from helpers.checks.feedback import CORRECT, INCORRECT, NOT_ATTEMPTED, Check, Feedback, Hint

__all__ = [
    "Feedback",
    "Hint",
    "Check",
    "CORRECT",
    "NOT_ATTEMPTED",
    "INCORRECT",
]
