"""CheckedModule: checks a learner's arguments and inputs before a layer's own code runs,
so that the layer's ``__init__`` and ``forward`` read like the ones a learner writes.

The notebooks print the course's layers with ``inspect.getsource``. Validation inside
them (three lines of ten in a constructor) would hide the idea, so a layer declares its
checks apart, in two methods the notebooks do not print:

- ``check_arguments(**arguments)``: runs before ``__init__`` with the constructor's
  arguments by name (defaults filled in);
- ``check_input(*args, **kwargs)``: runs before every call of the layer (a forward
  pre-hook, PyTorch's public hook API) with the call's arguments.

Each raises a clear error naming the argument, what it got and what it expected. A
learner's subclass that defines its own ``__init__`` without ``check_arguments`` is left
as written; the checks of the class it extends still run through ``super().__init__``.
"""

import functools
import inspect

from torch import nn


class CheckedModule(nn.Module):
    """An nn.Module whose constructor arguments and call inputs are checked first."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or "check_arguments" not in cls.__dict__:
            return
        signature = inspect.signature(init)

        @functools.wraps(init)  # inspect.getsource(cls.__init__) shows the plain one
        def checked_init(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            arguments.pop(next(iter(signature.parameters)))  # self
            cls.check_arguments(**arguments)
            init(self, *args, **kwargs)

        cls.__init__ = checked_init

    def __init__(self):
        super().__init__()
        self.register_forward_pre_hook(_check_call, with_kwargs=True)

    @staticmethod
    def check_arguments(**arguments) -> None:
        """Raise a clear error for a constructor argument that cannot work."""

    def check_input(self, *args, **kwargs) -> None:
        """Raise a clear error for a call the layer cannot handle."""


def _check_call(module, args, kwargs):
    module.check_input(*args, **kwargs)
    return None  # the inputs go on unchanged
