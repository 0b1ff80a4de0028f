"""Seeded draws that leave the learner's random state alone: ``with seeded(789): ...``.

Explorers and exercise checks build modules and draw samples at fixed seeds, so that
they show the same numbers on every machine and every run. They do it inside
``seeded``, which gives PyTorch's global generator back its state afterwards: a
learner's next ``torch.rand`` is the one they would have drawn anyway.
"""

from contextlib import contextmanager

import torch


@contextmanager
def seeded(seed: int):
    """Draw from the global generator at ``seed`` inside the ``with`` block, then give it
    back the state it had before."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be a whole number such as 789, got {seed!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
