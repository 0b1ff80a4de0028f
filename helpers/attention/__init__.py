"""Reference attention maths, written to be read.

Every function here has the semantics of its PyTorch counterpart and is tested against
it (``tests/attention/``). Shapes use the course's letters: B batch, H heads,
T tokens, d_in and d_out features, d_k the size of a query/key vector.

Mask convention, as in ``torch.nn.functional.scaled_dot_product_attention``:
a boolean mask is True where a query **may attend** to a key; a float mask is **added**
to the scores (0 keeps a score, -inf removes it).

Split by role: ``core`` (scores, weights, scaled dot-product attention, heads split
and merged), ``masking`` (causal strategies, padding masks), ``dropout``,
``dropout_streams`` (the two ways CPU dropout draws its keep mask; the PyTorch release
decides which), ``modules`` (the nn.Module layers), ``checked`` (their argument and input
checks, kept out of the code learners read).
Import from ``helpers.attention``; every public name of those is here. Apart from them,
``demos`` holds what the notebooks and explorers compute only to show a point (weights
from random projections of any width, a padded batch masked the wrong way, ...): import it
from ``helpers.attention.demos``.
"""

from helpers.attention.core import (
    attention_scores,
    attention_weights,
    causal_mask,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from helpers.attention.dropout import (
    attention_dropout,
)
from helpers.attention.dropout_streams import (
    generator_keep_mask,
    mkl_keep_mask,
)
from helpers.attention.masking import (
    PADDING_SIDES,
    causal_padding_attn_mask,
    check_padding_mask,
    key_padding_attn_mask,
    masked_weights_by_neg_inf,
    masked_weights_by_renormalising,
    padding_mask,
    position_ids,
)
from helpers.attention.modules import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention,
)

__all__ = [
    "causal_mask",
    "attention_scores",
    "attention_weights",
    "scaled_dot_product_attention",
    "split_heads",
    "merge_heads",
    "masked_weights_by_renormalising",
    "masked_weights_by_neg_inf",
    "padding_mask",
    "check_padding_mask",
    "position_ids",
    "key_padding_attn_mask",
    "causal_padding_attn_mask",
    "PADDING_SIDES",
    "attention_dropout",
    "generator_keep_mask",
    "mkl_keep_mask",
    "SelfAttention",
    "CausalAttention",
    "MultiHeadAttentionWrapper",
    "MultiHeadAttention",
]
