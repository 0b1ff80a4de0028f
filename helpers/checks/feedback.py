"""Feedback and the machinery every exercise check shares.

A check calls the learner's function on inputs of its own (copies: nothing the learner owns
is touched) and returns a ``Feedback`` that a notebook shows as one line:

- ``Correct: ...`` (with a ``Note:`` when the answer took a road the notebook argued
  against);
- ``Not attempted yet: ...`` while the function still raises ``NotImplementedError``;
- ``Incorrect: ...`` naming the mistake it recognised.

Feedback comes in levels, as in Kaggle's exercises: the message names the mistake;
``check_x.hint()`` (or ``feedback.hint()``) nudges further; the solution stays behind the
exercise's ``%load`` line. No message shows the expected tensor or the line that fixes it.

Every check is a ``Check``: it never raises (an answer that raises, returns None, a float,
a wrong shape, NaN or a tensor on another device gets a message), gives the global random
generator back its state, and reports an answer that changes its inputs in place.
"""

import copy
import functools
import numbers
import warnings
from dataclasses import dataclass, field, replace

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

CORRECT, NOT_ATTEMPTED, INCORRECT = "correct", "not attempted", "incorrect"

# Said when the check itself failed on an answer: tests assert it never appears.
CHECK_FAILED = "the check could not judge this answer"


# ---------------------------------------------------------------- feedback


@dataclass(frozen=True)
class Hint:
    """A nudge, shown as ``Hint: ...``."""

    text: str

    def __repr__(self) -> str:
        return f"Hint: {self.text}"


@dataclass(frozen=True)
class Feedback:
    status: str
    message: str
    hint_text: str = ""  # the next level: a nudge, never the fix line (after a remark, a
    # way to see what the remark says, never the remark again)
    remark: str = ""  # for a right answer that took the road the notebook argued against
    check: str = ""  # the check's name, to say how to ask for a hint
    check_failed: bool = field(default=False, compare=False)

    def __repr__(self) -> str:
        lines = [self.message]
        if self.remark:
            lines.append(f"Note: {self.remark}")
        if self.status == INCORRECT and self.hint_text and self.check:
            lines.append(f"Stuck? {self.check}.hint() nudges further.")
        return "\n".join(lines)

    @property
    def correct(self) -> bool:
        return self.status == CORRECT

    def hint(self) -> Hint:
        """The next level of help for this feedback."""
        if self.status == CORRECT:
            # The Note is already on screen: the hint goes one step further, or says nothing.
            further = self.hint_text[:1].upper() + self.hint_text[1:]
            return Hint(f"nothing to fix: the answer is right. {further}".rstrip())
        return Hint(self.hint_text or "compare each step of your answer with the notebook's "
                                      "cells above the exercise.")


def correct(message: str, remark: str = "", hint: str = "") -> Feedback:
    """A right answer; ``hint`` is the next level after ``remark`` (how to see it for
    oneself), shown by ``hint()`` only when there is a remark."""
    return Feedback(CORRECT, f"Correct: {message}", remark=remark,
                    hint_text=hint if remark else "")


def not_attempted(name: str) -> Feedback:
    return Feedback(NOT_ATTEMPTED,
                    f"Not attempted yet: complete {name} above, then check again.")


def incorrect(message: str, hint: str = "") -> Feedback:
    if not message.endswith((".", "?", "!", ")")):
        message += "."
    return Feedback(INCORRECT, f"Incorrect: {message}", hint_text=hint)


def hint_of(feedback: Feedback) -> str:
    """The message without its ``Incorrect: `` prefix, to build a longer message on."""
    return feedback.message.removeprefix("Incorrect: ")


def with_context(feedback: Feedback, context: str) -> Feedback:
    """The same feedback, its message followed by where it happened (``for T = 3``)."""
    if not context or feedback.status != INCORRECT:
        return feedback
    return replace(feedback, message=f"{feedback.message.rstrip('.')} ({context}).")


class Check:
    """An exercise check: ``check(answer)`` returns a Feedback and never raises;
    ``check.hint()`` nudges further after the last run.

    The global random generator is given back its state after every run, whatever the
    answer did to it, and warnings the answer raises are kept from the notebook's output
    (a check names the mistake they point to).
    """

    def __init__(self, function, general_hint: str):
        functools.update_wrapper(self, function)
        self.function = function
        self.general_hint = general_hint
        self.last = None

    def __call__(self, answer) -> Feedback:
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                feedback = self.function(answer)
            except Exception as error:  # a bug of the check's: never raised at a learner
                feedback = Feedback(
                    INCORRECT,
                    f"Incorrect: {CHECK_FAILED} ({type(error).__name__}: {error}). Run your "
                    "function on a small input of your own and look at what it returns.",
                    check_failed=True)
        self.last = replace(feedback, check=self.__name__)
        return self.last

    def hint(self) -> Hint:
        """The hint for the last answer checked (a general one before the first run)."""
        if self.last is None or self.last.status == NOT_ATTEMPTED:
            return Hint(self.general_hint)
        return self.last.hint()

    def __repr__(self) -> str:
        return f"<exercise check {self.__name__}>"


def exercise_check(general_hint: str):
    """Decorator: make a check function a ``Check`` with this general hint."""
    def wrap(function):
        return Check(function, general_hint)
    return wrap


# ---------------------------------------------------------------- comparing


def close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Same shape and the same values up to float32 rounding; NaN matches NaN."""
    if a.shape != b.shape or a.device != b.device or a.device.type == "meta":
        return False
    return bool(torch.allclose(a.detach().double(), b.detach().double(), atol=atol, rtol=rtol,
                               equal_nan=True))


def shape_text(shape) -> str:
    """A shape as Python writes a tuple: (5, 4), (8,), ()."""
    return str(tuple(int(size) for size in shape))


def describe(value) -> str:
    """What a learner returned, in words: 'a float', 'a tuple', 'None'."""
    if value is None:
        return "None"
    kind = type(value)
    if kind.__module__ == "torch.return_types":
        return f"a torch.return_types.{kind.__name__} (a pair of values and indices)"
    if kind.__module__ == "numpy" and kind.__name__ == "ndarray":
        return "a NumPy array"
    name = kind.__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def tensor_problem(answer, name: str, expected=None, *, kind: str = "float", shape=None):
    """Feedback when ``answer`` is not a usable tensor like ``expected``, else None.

    Checked in the order a learner fixes things: a return at all, a tensor, the inputs'
    device, the kind of values (``kind``: "float", "bool" or None for any), the shape.
    """
    if answer is None:
        return incorrect(f"{name} returned None: is a `return` missing?",
                         "a function without `return` gives back None; return the tensor "
                         "you computed.")
    if not isinstance(answer, torch.Tensor):
        return incorrect(f"{name} returned {describe(answer)}; expected a torch.Tensor",
                         "return the tensor itself, not a Python number, list or tuple.")
    if expected is not None and not isinstance(expected, torch.Tensor):
        expected, shape = None, expected  # a shape alone
    if expected is not None and answer.device != expected.device:
        return incorrect(
            f"your answer is on device '{answer.device}'; the check's inputs are on "
            f"'{expected.device}'. Keep the result where the inputs are",
            "a tensor made from scratch lands on the default device unless told otherwise: "
            "make new tensors on the inputs' device, and do not move the result.")
    if kind == "bool" and answer.dtype != torch.bool:
        return incorrect(f"{name} returned a {answer.dtype} tensor; the mask must be boolean",
                         "a float mask means something else (it is added to the scores); a "
                         "comparison or tril/triu on a boolean tensor gives a boolean one.")
    if kind == "float" and not answer.is_floating_point():
        return incorrect(f"{name} returned a {answer.dtype} tensor; expected floating-point "
                         "values", "integer or boolean tensors cannot hold weights between "
                                   "0 and 1.")
    shape = tuple(expected.shape) if expected is not None and shape is None else shape
    if shape is not None and shape is not False and tuple(answer.shape) != tuple(shape):
        return incorrect(f"{name} returned shape {shape_text(answer.shape)}, expected "
                         f"{shape_text(shape)}",
                         "take every size from the arguments, never from the notebook's "
                         "variables; print the shape after each step to find where it goes "
                         "wrong.")
    return None


def compare(answer, expected: torch.Tensor, mistakes, name: str, fallback, success: str = "",
            *, kind: str = "float"):
    """Feedback for an answer: its type, device and shape, then the right answer, then
    known wrong ones (``mistakes``: (wrong answer, Feedback) pairs), then ``fallback``
    (a Feedback)."""
    problem = tensor_problem(answer, name, expected, kind=kind)
    if problem:
        return problem
    answer = answer.detach()
    if close(answer, expected):
        return correct(success)
    for wrong, feedback in mistakes:
        if close(answer, wrong):
            return incorrect(feedback) if isinstance(feedback, str) else feedback
    return incorrect(fallback) if isinstance(fallback, str) else fallback


def as_number(answer):
    """A real number as float (Python, NumPy or a one-element tensor), else None."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, torch.Tensor):
        if answer.numel() != 1 or answer.dtype == torch.bool or answer.device.type == "meta":
            return None
        return answer.item()
    if isinstance(answer, numbers.Real):
        return float(answer)
    item = getattr(answer, "item", None)  # a NumPy 0-d array
    if callable(item) and getattr(answer, "shape", None) == ():
        value = item()
        return None if isinstance(value, bool) else as_number(value)
    return None


# ---------------------------------------------------------------- running an answer


def _copy(argument):
    """A copy the answer may do anything to; a generator is handed over as it is (drawing
    from it is the point)."""
    if isinstance(argument, torch.Tensor):
        copied = argument.detach().clone()
        return copied.requires_grad_(argument.requires_grad) if argument.is_leaf else copied
    if isinstance(argument, (nn.Module, list, tuple, dict)):
        return copy.deepcopy(argument)
    return argument


def _unchanged(before, after) -> bool:
    if isinstance(before, torch.Tensor):
        return (isinstance(after, torch.Tensor) and before.shape == after.shape
                and before.dtype == after.dtype and close(before, after, atol=0.0, rtol=0.0))
    if isinstance(before, nn.Module):
        one, two = before.state_dict(), after.state_dict()
        return one.keys() == two.keys() and all(_unchanged(one[k], two[k]) for k in one)
    if isinstance(before, (list, tuple, dict)):
        try:
            return bool(before == after)
        except Exception:  # elements that cannot be compared: assume they are as they were
            return True
    return True


@dataclass
class Outcome:
    """What one call of the learner's answer gave: ``answer``, or ``failed`` (a Feedback)."""

    answer: object = None
    failed: Feedback | None = None
    error: BaseException | None = None
    warned: tuple = ()


# Errors a learner meets often, explained: (words in the error, what the mistake is, hint).
KNOWN_ERRORS = [
    ("torch.return_types",
     "max(dim=...) and min(dim=...) return a pair, the values and their indices, not a "
     "tensor, so arithmetic with the pair fails",
     "the pair has a field for each of its two parts; you want the values."),
    ("but got float",
     "view and reshape need whole numbers, and `/` always gives a float in Python "
     "(12 / 3 is 4.0)",
     "Python has an operator for division that keeps whole numbers whole."),
    ("found element of type float",
     "view and reshape need whole numbers, and `/` always gives a float in Python "
     "(12 / 3 is 4.0)",
     "Python has an operator for division that keeps whole numbers whole."),
    ("leaf Variable that requires grad is being used in an in-place operation",
     "an in-place operation (a method ending in `_`, or an assignment into a tensor) "
     "changed a tensor that requires grad, which autograd forbids: it needs the original "
     "values for the backward pass",
     "compute a new tensor instead of writing into the one you were given: the "
     "methods without the trailing `_` return a new tensor."),
    ("modified by an inplace operation",
     "an in-place operation (a method ending in `_`) changed a tensor that autograd still "
     "needs for the backward pass",
     "compute a new tensor instead of changing one in place."),
    ("view size is not compatible",
     "view needs the memory laid out in the order of the new shape, and after a "
     "transpose it is not",
     "the notebook met this error when joining the heads: look at what it did between "
     "the transpose and the view."),
    ("cannot be converted to type c10::Half without overflow",
     "a fill value too large for float16 (such as -1e9) was written into float16 scores",
     "-inf exists in every floating dtype; a hard-coded finite number does not fit them all."),
    ("Dimension out of range",
     "a dimension number that does not exist for this input: the answer counts dimensions "
     "from the front, so it works for one number of dimensions only",
     "negative dimensions count from the end, whatever comes before."),
    ("not on the expected device",
     "tensors on different devices were combined: something was created on the default "
     "device instead of the inputs' device",
     "make new tensors on the device of the inputs."),
    ("Expected all tensors to be on the same device",
     "tensors on different devices were combined: something was created on the default "
     "device instead of the inputs' device",
     "make new tensors on the device of the inputs."),
]

T_WARNING = "`x.T` on tensors of dimension other than 2"


def error_text(error: BaseException) -> str:
    """The first line of an error's message, without its final full stop."""
    return str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else ""


def explained(error: BaseException, name: str, meaning: str, hint: str) -> Feedback:
    """The error as the learner's own cell would show it, then what it means."""
    return incorrect(f"{name} raised {type(error).__name__}: {error_text(error)}. That is: "
                     f"{meaning}", hint)


def explain_error(error: BaseException, name: str, warned=(), extra=()):
    """Feedback for an answer that raised ``error``: its known meaning when there is one."""
    text = error_text(error)
    raw = f"{name} raised {type(error).__name__}: {text}"
    if any(T_WARNING in message for message in warned):
        return incorrect(f"{raw}. `.T` on a tensor of more than 2 dimensions reverses ALL of "
                         "them (batch included), so the batch dimension moved to the end",
                         "only the last two dimensions should swap; torch has a "
                         "transpose that takes the two dimensions to swap.")
    for words, meaning, hint in [*extra, *KNOWN_ERRORS]:
        if words in text:
            return explained(error, name, meaning, hint)
    return incorrect(raw, "run your function on a small input of your own in a new cell: the "
                          "error's traceback shows the line that fails.")


def run(function, name: str, arguments: dict, *, extra_errors=(), check_inputs: bool = True):
    """Call ``function`` on copies of ``arguments`` (label -> value, passed in order).

    ``failed`` is set when the answer is a stub, raises, or changed one of its inputs in
    place (the copies are compared with the check's own values). With
    ``check_inputs=False`` the arguments are passed as they are, and that is left to the
    check.
    """
    given = {label: _copy(value) if check_inputs else value
             for label, value in arguments.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            answer = function(*given.values())
        except NotImplementedError as error:
            return Outcome(failed=not_attempted(name), error=error)
        except Exception as error:  # reported to the learner, never raised at them
            warned = tuple(str(w.message) for w in caught)
            return Outcome(failed=explain_error(error, name, warned, extra_errors), error=error,
                           warned=warned)
    warned = tuple(str(w.message) for w in caught)
    if check_inputs:
        for label, value in arguments.items():
            if not _unchanged(value, given[label]):
                return Outcome(answer, incorrect(
                    f"{name} changed its argument `{label}` in place (a method ending in `_`, "
                    "or an assignment into it): the caller's tensor is not yours to change",
                    "build the result as a new tensor; the methods without a trailing `_` "
                    "leave their input as it was."), warned=warned)
    return Outcome(answer, warned=warned)


def construct(cls, name: str, *args):
    """Build the learner's class; ``(instance, None)`` or ``(None, Feedback)``."""
    outcome = run(cls, name, dict(enumerate(args)), check_inputs=False)
    return outcome.answer, outcome.failed


class OperationLog(TorchFunctionMode):
    """Inside ``with OperationLog() as log:``, ``log.name``, ``log.shapes`` and
    ``log.dtypes`` are the last torch operation run and the shapes and dtypes of its tensor
    arguments, in order.

    After an answer raised, that is the operation that failed (a size mismatch in
    ``masked_fill``, a matrix product whose sizes do not fit), so a check can say which
    tensors met there, where the error's text names sizes only. It uses torch's documented
    way to see every torch call (``torch.overrides.TorchFunctionMode``); the operations a
    torch operation runs inside itself are not seen, only the ones Python code calls.
    """

    def __init__(self):
        super().__init__()
        self.name, self.shapes, self.dtypes = "", (), ()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [argument for argument in [*args, *kwargs.values()]
                   if isinstance(argument, torch.Tensor)]
        self.name = getattr(func, "__name__", "")
        self.shapes = tuple(tuple(tensor.shape) for tensor in tensors)
        self.dtypes = tuple(tensor.dtype for tensor in tensors)
        return func(*args, **kwargs)


class DropoutSpy(nn.Dropout):
    """An nn.Dropout that records the inputs it is called on (and drops as usual)."""

    def __init__(self, p: float):
        nn.Dropout.__init__(self, p)
        self.seen = []

    def forward(self, x):
        self.seen.append(x.detach().clone())
        return super().forward(x)

    def __deepcopy__(self, memo):
        return self  # the spy stays itself when the module holding it is copied
