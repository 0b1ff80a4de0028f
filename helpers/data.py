"""The running example used in every notebook, built in one place.

Six tokens, "Your journey starts with one step", each embedded as a 3-d vector. The
values are the ones used by the widely published reference material (Raschka, *Build a
Large Language Model (From Scratch)*, chapter 3), so that with the same seeds a learner
gets the same numbers.

- ``TOKENS``, ``example_inputs()``, ``example_batch()``: the tokens and their embeddings;
- ``example_self_attention()``, ``example_causal_attention()``: the seeded
  ``SelfAttention(3, 2)`` and ``CausalAttention(3, 2)`` the explorers and checks use, and
  ``example_queries_and_keys()``, the running example's queries and keys through the first;
- ``padded_example_ids()``, ``padded_example_embeddings()``: a padded batch of the
  running example's tokens (notebook 06).
"""

import torch

from helpers.attention import CausalAttention, SelfAttention, padding_mask
from helpers.seeding import seeded
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


# The seed of the reference material's SelfAttention(3, 2): its weights give the attention
# weights printed in the book and in the source documents.
REFERENCE_SEED = 789


def example_self_attention(seed: int = REFERENCE_SEED) -> SelfAttention:
    """A ``SelfAttention(d_in=3, d_out=2)`` built at ``seed`` (the learner's random state
    is left alone); at the default seed, the reference material's weights."""
    with seeded(seed):
        return SelfAttention(d_in=3, d_out=2)


def example_queries_and_keys(seed: int = REFERENCE_SEED) -> tuple:
    """Queries and keys (6, 2) each: the running example through the query and key layers
    of ``example_self_attention(seed)``, without gradients."""
    module = example_self_attention(seed)
    x = example_inputs()  # (T, d_in)
    with torch.no_grad():
        return module.W_query(x), module.W_key(x)


def example_causal_attention(seed: int, dropout: float = 0.0) -> CausalAttention:
    """A ``CausalAttention(d_in=3, d_out=2)`` for the running example's six tokens, built
    at ``seed`` (the learner's random state is left alone)."""
    with seeded(seed):
        return CausalAttention(d_in=3, d_out=2, context_length=len(TOKENS), dropout=dropout)


PAD_ID = 0  # the padding token's id; ids 1..6 are TOKENS in order
PADDING_SEQUENCE_STARTS = (0, 4, 2)  # sequence b reads the running example from this token on


def padded_example_ids(lengths, T: int, *, side: str = "right") -> torch.Tensor:
    """Token ids (B, T) of a padded batch of the running example's tokens, pad id 0.

    Token ids 1..6 are the running example's tokens (id = index in TOKENS + 1). Sequence b
    holds ``lengths[b]`` tokens read cyclically from token ``PADDING_SEQUENCE_STARTS[b]``:
    "Your journey ...", "one step Your ...", "starts with one ...".
    """
    is_token = padding_mask(list(lengths), T, side=side)  # (B, T), checks lengths and side
    if len(lengths) > len(PADDING_SEQUENCE_STARTS):
        raise ValueError(f"lengths holds at most {len(PADDING_SEQUENCE_STARTS)} sequences, "
                         f"got {len(lengths)}")
    ids = torch.full(is_token.shape, PAD_ID)
    for b, length in enumerate(lengths):
        start = PADDING_SEQUENCE_STARTS[b]
        tokens = [(start + k) % len(TOKENS) + 1 for k in range(length)]
        ids[b, is_token[b]] = torch.tensor(tokens, dtype=ids.dtype)
    return ids


def padded_example_embeddings(ids: torch.Tensor) -> torch.Tensor:
    """(B, T) token ids -> (B, T, 3) embeddings: the running example's, zeros for padding."""
    table = torch.cat([torch.zeros(1, 3), example_inputs()])  # row 0 is the padding token
    return table[ids]
