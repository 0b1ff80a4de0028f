"""The running example's reference numbers, built here without helpers.data, so that tests
can compare the helpers with them: SelfAttention(3, 2) after torch.manual_seed(789), as in
the reference material (Raschka, *Build a Large Language Model (From Scratch)*, ch. 3)."""

import torch

from helpers.attention import SelfAttention, attention_scores, attention_weights
from helpers.data import example_inputs

# The causal attention weights of the running example, as the reference material prints them.
REFERENCE_MASKED_WEIGHTS = torch.tensor([
    [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
    [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
    [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
    [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
])


def reference_projections():
    """Queries and keys (6, 2) each of the running example, after torch.manual_seed(789)."""
    torch.manual_seed(789)
    module = SelfAttention(d_in=3, d_out=2)
    x = example_inputs()
    with torch.no_grad():
        return module.W_query(x), module.W_key(x)


def running_example_scores() -> torch.Tensor:
    """Scaled scores (6, 6)."""
    return attention_scores(*reference_projections())


def causal_example_weights() -> torch.Tensor:
    """Causal attention weights (6, 6)."""
    return attention_weights(*reference_projections(), is_causal=True)
