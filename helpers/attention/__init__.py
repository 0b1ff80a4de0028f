"""Reference attention maths, written to be read.

Every function here has the semantics of its PyTorch counterpart and is tested against
it (``tests/test_attention.py``). Shapes use the course's letters: B batch, H heads,
T tokens, d_in and d_out features, d_k the size of a query/key vector.

Mask convention, as in ``torch.nn.functional.scaled_dot_product_attention``:
a boolean mask is True where a query **may attend** to a key; a float mask is **added**
to the scores (0 keeps a score, -inf removes it).

Split by role: ``core`` (scores, weights, scaled dot-product attention), ``masking``
(causal strategies, padding masks), ``dropout``, ``modules`` (the nn.Module layers).
Import from ``helpers.attention``; every public name is here.
"""

from helpers.attention.core import (
    MAX_PROJECTION_WIDTH,
    attention_scores,
    attention_weights,
    causal_mask,
    projected_attention_weights,
    scaled_dot_product_attention,
)
from helpers.attention.dropout import (
    attention_dropout,
    running_mean,
)
from helpers.attention.masking import (
    FULLY_MASKED_ROWS,
    PADDING_MASKED,
    PADDING_SIDES,
    causal_padding_attn_mask,
    check_padding_mask,
    key_padding_attn_mask,
    masked_weights_by_neg_inf,
    masked_weights_by_renormalising,
    padded_causal_weights,
    padding_mask,
    position_ids,
)
from helpers.attention.modules import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention,
    head_split_problem,
    multi_head_weights,
)

__all__ = [
    "causal_mask",
    "attention_scores",
    "attention_weights",
    "scaled_dot_product_attention",
    "projected_attention_weights",
    "MAX_PROJECTION_WIDTH",
    "masked_weights_by_renormalising",
    "masked_weights_by_neg_inf",
    "padding_mask",
    "check_padding_mask",
    "position_ids",
    "key_padding_attn_mask",
    "causal_padding_attn_mask",
    "padded_causal_weights",
    "PADDING_SIDES",
    "PADDING_MASKED",
    "FULLY_MASKED_ROWS",
    "attention_dropout",
    "running_mean",
    "SelfAttention",
    "CausalAttention",
    "MultiHeadAttentionWrapper",
    "MultiHeadAttention",
    "head_split_problem",
    "multi_head_weights",
]
