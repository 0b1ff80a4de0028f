"""The running example used in every notebook.

Six tokens, "Your journey starts with one step", each embedded as a 3-d vector. The
values are the ones used by the widely published reference material, so that with the
same seeds a learner gets the same numbers.
"""

import torch

from helpers.validation import check_positive_int

TOKENS = ("Your", "journey", "starts", "with", "one", "step")

_EMBEDDINGS = (
    (0.43, 0.15, 0.89),  # Your
    (0.55, 0.87, 0.66),  # journey
    (0.57, 0.85, 0.64),  # starts
    (0.22, 0.58, 0.33),  # with
    (0.77, 0.25, 0.10),  # one
    (0.05, 0.80, 0.55),  # step
)


def example_inputs() -> torch.Tensor:
    """The embeddings of the running example, a new (T=6, d_in=3) float32 tensor.

    A fresh tensor is returned on each call, so a learner who changes it in place does
    not change it for the rest of the notebook.
    """
    return torch.tensor(_EMBEDDINGS, dtype=torch.float32)


def example_batch(batch_size: int = 2) -> torch.Tensor:
    """The running example stacked ``batch_size`` times: shape (B, T=6, d_in=3)."""
    check_positive_int(batch_size, "batch_size")
    return torch.stack([example_inputs()] * batch_size, dim=0)
