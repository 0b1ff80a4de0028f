"""Shared by the tests of the exercise checks (tests/test_*checks.py)."""

from helpers.checks import INCORRECT


def stub(*args):
    """An exercise left as handed out: its body raises NotImplementedError."""
    raise NotImplementedError


def assert_hint(feedback, hint):
    """The check said Incorrect, with this hint in its message."""
    assert feedback.status == INCORRECT, feedback.message
    assert hint in feedback.message, feedback.message
