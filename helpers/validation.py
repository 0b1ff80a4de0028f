"""Input checks shared by the helpers.

Each check raises an error that names the argument, what it got and what was expected,
so that a learner sees "query must have at least 2 dimensions ..." instead of a
broadcasting error from deep inside torch.
"""

import numbers

import torch


def shape_text(tensor: torch.Tensor) -> str:
    """A shape written as a learner would, e.g. ``(2, 6, 3)``."""
    return "(" + ", ".join(str(size) for size in tensor.shape) + ")"


def check_tensor(value, name: str, *, ndim=None, min_ndim=None, floating=True) -> torch.Tensor:
    """Check that ``value`` is a tensor of the expected rank and kind; return it unchanged.

    ``ndim`` is an exact rank, or a tuple of accepted ranks; ``min_ndim`` a lowest rank.
    With ``floating=True`` the dtype must be a floating-point one.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if floating and not value.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor (e.g. torch.float32), got {value.dtype}; "
            f"convert it with {name}.float()"
        )
    if ndim is not None:
        accepted = ndim if isinstance(ndim, tuple) else (ndim,)
        if value.ndim not in accepted:
            wanted = " or ".join(str(n) for n in accepted)
            raise ValueError(
                f"{name} must have {wanted} dimensions, got {value.ndim} "
                f"(shape {shape_text(value)})"
            )
    if min_ndim is not None and value.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions, got {value.ndim} "
            f"(shape {shape_text(value)})"
        )
    return value


def check_probability(value, name: str) -> float:
    """Check that ``value`` is a real number in [0, 1]; return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number between 0 and 1, got {type(value).__name__}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1 (a probability), got {value}")
    return float(value)


def check_positive_int(value, name: str) -> int:
    """Check that ``value`` is an int >= 1; return it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return int(value)


def check_positive_number(value, name: str) -> float:
    """Check that ``value`` is a real number > 0; return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__}")
    if not float(value) > 0.0:
        raise ValueError(f"{name} must be greater than 0, got {value}")
    return float(value)


def broadcast_shape(*shapes) -> tuple | None:
    """The shape that ``shapes`` broadcast to, or None when they cannot broadcast.

    Same rule as ``torch.broadcast_shapes``, written out because that function imports
    sympy on first use (about half a second, once per kernel).
    """
    ndim = max((len(shape) for shape in shapes), default=0)
    result = []
    for position in range(-ndim, 0):
        sizes = {shape[position] for shape in shapes if len(shape) >= -position} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)
