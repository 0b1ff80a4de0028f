"""Feedback and the machinery every exercise check shares.

A check calls the learner's function on inputs of its own (copies: nothing the learner owns
is touched) and returns a ``Feedback`` that a notebook shows as one line:

- ``Correct: ...``;
- ``Not attempted yet: ...`` while the function still raises ``NotImplementedError``;
- ``Incorrect: ...`` with a hint aimed at the mistake it recognised.

It compares the answer with the right one and with the answers the usual mistakes give,
and it never shows the expected tensor.
"""

import copy
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

CORRECT, NOT_ATTEMPTED, INCORRECT = "correct", "not attempted", "incorrect"


@dataclass(frozen=True)
class Feedback:
    status: str
    message: str

    def __repr__(self) -> str:
        return self.message

    @property
    def correct(self) -> bool:
        return self.status == CORRECT


def correct(message: str) -> Feedback:
    return Feedback(CORRECT, f"Correct: {message}")


def not_attempted(name: str) -> Feedback:
    return Feedback(NOT_ATTEMPTED,
                    f"Not attempted yet: complete {name} above, then run this check again.")


def incorrect(hint: str) -> Feedback:
    return Feedback(INCORRECT, f"Incorrect: {hint}")


def hint_of(feedback: Feedback) -> str:
    """The message without its ``Incorrect: `` prefix, to build a longer hint on."""
    return feedback.message.removeprefix("Incorrect: ")


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape and the same values up to float32 rounding; NaN matches NaN."""
    return a.shape == b.shape and bool(
        torch.allclose(a.double(), b.double(), atol=1e-5, rtol=1e-4, equal_nan=True))


def tensor_problem(answer, name: str, shape=None):
    """Feedback when ``answer`` is not a tensor (or not of ``shape``), else None."""
    if answer is None:
        return incorrect(f"{name} returned None: is a `return` missing?")
    if not isinstance(answer, torch.Tensor):
        return incorrect(f"{name} returned a {type(answer).__name__}, expected a torch.Tensor")
    if shape is not None and tuple(answer.shape) != tuple(shape):
        return incorrect(f"{name} returned shape {tuple(answer.shape)}, expected {tuple(shape)}")
    return None


def compare(answer, expected: torch.Tensor, mistakes, name: str, fallback: str, success: str):
    """Feedback for an answer: its type and shape, then the right answer, then known wrong
    ones (``mistakes``: pairs of a wrong answer and its hint), then ``fallback``."""
    problem = tensor_problem(answer, name, expected.shape)
    if problem:
        return problem
    answer = answer.detach()
    if close(answer, expected):
        return correct(success)
    for wrong, hint in mistakes:
        if close(answer, wrong):
            return incorrect(hint)
    return incorrect(fallback)


def attempt(function, name: str, *args, **kwargs):
    """``(answer, None)``, or ``(None, Feedback)`` when the function is a stub or fails.

    The arguments are passed as they are: give copies.
    """
    try:
        return function(*args, **kwargs), None
    except NotImplementedError:
        return None, not_attempted(name)
    except Exception as error:  # reported to the learner, never raised at them
        return None, incorrect(f"{name} raised {type(error).__name__}: {error}")


def _copy(argument):
    if isinstance(argument, torch.Tensor):
        return argument.clone()
    if isinstance(argument, nn.Module):
        return copy.deepcopy(argument)
    return argument


def call(function, name: str, *args):
    """``attempt`` on copies of the tensor and module arguments: whatever the answer does to
    them in place, the check's own data stays as it was."""
    return attempt(function, name, *(_copy(argument) for argument in args))


@contextmanager
def seeded(seed: int):
    """Draw from the global generator at ``seed``, then give it back its state as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
