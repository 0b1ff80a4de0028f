"""Notebook 06's exercise checks: a table of right and wrong answers per check."""

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import MultiHeadAttention, attention_weights, causal_mask
from helpers.checks.padding import (
    check_padded_multi_head_attention,
    check_safe_masked_softmax,
)
from tests.checks.support import ROOT, table_tests

NEG_INF = float("-inf")

# ---------------------------------------------------------------- safe masked softmax


def softmax_right(scores, allowed):
    no_key = ~allowed.any(dim=-1, keepdim=True)  # (..., T, 1)
    safe = scores.masked_fill(~allowed, NEG_INF).masked_fill(no_key, 0.0)
    return torch.softmax(safe, dim=-1).masked_fill(no_key, 0.0)


def softmax_with_where(scores, allowed):
    no_key = ~allowed.any(dim=-1, keepdim=True)  # (..., T, 1)
    kept = torch.where(allowed | no_key, scores, NEG_INF)  # empty rows keep their scores
    return torch.softmax(kept, dim=-1) * ~no_key


def softmax_by_hand(scores, allowed):
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    exponentials = torch.exp(shifted) * allowed
    sums = exponentials.sum(dim=-1, keepdim=True)
    return exponentials / torch.where(sums > 0, sums, 1.0)


def softmax_float64(scores, allowed):
    return softmax_right(scores.double(), allowed)


def formed_nan_replaced(scores, allowed):
    weights = torch.softmax(scores.masked_fill(~allowed, NEG_INF), dim=-1)
    return weights.masked_fill(~allowed.any(dim=-1, keepdim=True), 0.0)


def additive_then_nan_to_num(scores, allowed):
    additive = torch.zeros_like(scores).masked_fill(~allowed, NEG_INF)
    return torch.softmax(scores + additive, dim=-1).nan_to_num(0.0)


def three_dims_only(scores, allowed):
    no_key = ~allowed.any(dim=2, keepdim=True)
    safe = scores.masked_fill(~allowed, NEG_INF).masked_fill(no_key, 0.0)
    return torch.softmax(safe, dim=-1).masked_fill(no_key, 0.0)


def no_keepdim(scores, allowed):
    no_key = ~allowed.any(dim=-1)  # (..., T): one value per row, no axis for the keys
    safe = scores.masked_fill(~allowed, NEG_INF).masked_fill(no_key, 0.0)
    return torch.softmax(safe, dim=-1).masked_fill(no_key, 0.0)


def no_keepdim_where(scores, allowed):
    no_key = ~allowed.any(dim=-1)  # (..., T)
    kept = torch.where(allowed | no_key, scores, NEG_INF)
    return torch.softmax(kept, dim=-1) * ~no_key


def boolean_indexing(scores, allowed):
    no_key = ~allowed.any(dim=-1, keepdim=True)
    filled = scores.clone()
    filled[~allowed] = NEG_INF  # needs allowed of the scores' own shape
    filled = filled.masked_fill(no_key, 0.0)
    return torch.softmax(filled, dim=-1).masked_fill(no_key, 0.0)


def in_place(scores, allowed):
    no_key = ~allowed.any(dim=-1, keepdim=True)
    scores.masked_fill_(~allowed, NEG_INF)
    return torch.softmax(scores.masked_fill(no_key, 0.0), dim=-1).masked_fill(no_key, 0.0)


SAFE_RIGHT = {
    "finite rows, then zero": softmax_right,
    "where": softmax_with_where,
    "exp by hand, guarded sum": softmax_by_hand,
    "float64": softmax_float64,
}

SAFE_WRONG = {
    "plain softmax": (lambda s, a: torch.softmax(s.masked_fill(~a, NEG_INF), -1),
                      "NaN in the rows with no allowed key"),
    "finite fill": (lambda s, a: torch.softmax(s.masked_fill(~a, torch.finfo(s.dtype).min), -1),
                    "spread evenly"),
    "inverted": (lambda s, a: torch.softmax(s.masked_fill(a, NEG_INF), -1), "inverted"),
    "inverted, cleaned": (lambda s, a: torch.softmax(s.masked_fill(a, NEG_INF), -1)
                          .nan_to_num(0.0), "inverted"),
    "zeroed after": (lambda s, a: torch.softmax(s, -1).masked_fill(~a, 0.0),
                     "no longer sum to 1"),
    "nan_to_num after additive": (additive_then_nan_to_num, "the gradient of the scores is "
                                                             "NaN"),
    "NaN formed, replaced": (formed_nan_replaced, "a NaN forms inside your function"),
    "3-D only: any(dim=2)": (three_dims_only, "dimension 2 of 4"),
    "any without keepdim": (no_keepdim, "any without keepdim=True"),
    "any without keepdim, where": (no_keepdim_where, "any without keepdim=True"),
    "boolean indexing": (boolean_indexing, "Boolean indexing, scores[~allowed] = ..., needs "
                                           "the mask's full shape"),
    "in place on scores": (in_place, "requires grad"),
    "detached": (lambda s, a: softmax_right(s.detach(), a), "carry no gradient"),
    "wrong shape": (lambda s, a: softmax_right(s, a)[0], "returned shape"),
    "no return": (lambda s, a: None, "`return`"),
    "another device": (lambda s, a: softmax_right(s, a).to("meta"), "on device 'meta'"),
}

test_safe_right, test_safe_wrong = table_tests(check_safe_masked_softmax, SAFE_RIGHT, SAFE_WRONG)


def test_boolean_indexing_is_named_on_the_broadcast_mask_only():
    feedback = check_safe_masked_softmax(boolean_indexing)
    assert "allowed (2, 1, 5, 5), broadcast over the heads" in feedback.message, feedback.message
    assert "not on one that broadcasts" in feedback.message, feedback.message
    assert "masked_fill or torch.where" in feedback.hint_text, feedback.hint_text


def test_keepdim_hint_names_the_line_and_the_broadcast():
    check_safe_masked_softmax(no_keepdim)
    hint = check_safe_masked_softmax.hint().text
    assert "the `any` over the keys (dim=-1), needs keepdim=True" in hint, hint
    assert "(..., T_q, 1)" in hint and "(..., T_q)" in hint, hint

# ---------------------------------------------------------------- the whole module


def load_solution():
    namespace = {}
    source = (ROOT / "solutions/06_padding_masks/my_multi_head_attention.py").read_text()
    exec(compile(source, "my_multi_head_attention.py", "exec"), namespace)  # noqa: S102
    return namespace["MyMultiHeadAttention"]


Solution = load_solution()


def attention_module(*, causal=True, keys=True, rows=False, scale="head", split=True,
                     merge=True, out_proj=True, safe=True, dropout_on=True, always_drop=False,
                     persistent_mask=False, names=("W_query", "W_key", "W_value", "out_proj"),
                     no_heads_axis=False, in_place=False):
    """A learner's MultiHeadAttention with one step changed (the arguments name the step)."""
    class Answer(nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__()
            self.num_heads, self.head_dim, self.d_out = num_heads, d_out // num_heads, d_out
            for name in names[:3]:
                setattr(self, name, nn.Linear(d_in, d_out, bias=qkv_bias))
            setattr(self, names[3], nn.Linear(d_out, d_out))
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("causal_mask", causal_mask(context_length),
                                 persistent=persistent_mask)

        def forward(self, x, padding_mask=None):
            B, T, _ = x.shape
            H, head_dim = self.num_heads, self.head_dim
            layers = [getattr(self, name) for name in names]

            def heads(features):
                if split:
                    return features.view(B, T, H, head_dim).transpose(1, 2)
                return features.view(B, H, T, head_dim)

            queries, keys_, values = (heads(layer(x)) for layer in layers[:3])
            size = {"head": head_dim, "d_out": self.d_out, "none": 1}[scale]
            scores = queries @ keys_.transpose(-2, -1) / size**0.5
            allowed = self.causal_mask[:T, :T] if causal else torch.ones(T, T, dtype=torch.bool)
            if padding_mask is not None and in_place:
                allowed &= padding_mask[:, None, None, :]  # into the buffer's (T, T) slice
            if padding_mask is not None and keys:
                allowed = allowed & padding_mask[:, None, None, :]
            if padding_mask is not None and no_heads_axis:
                allowed = allowed & padding_mask[:, None, :]  # (B, 1, T): B meets the heads
            if padding_mask is not None and rows:
                allowed = allowed & padding_mask[:, None, :, None]
            if safe:
                weights = attention_weights(queries, keys_, attn_mask=allowed, scale=1 / size**0.5)
            else:
                weights = torch.softmax(scores.masked_fill(~allowed, NEG_INF), dim=-1)
            if always_drop:
                weights = F.dropout(weights, self.dropout.p, training=True)
            elif dropout_on:
                weights = self.dropout(weights)
            context = weights @ values
            if merge:
                context = context.transpose(1, 2)
            context = context.reshape(B, T, H * head_dim)
            return layers[3](context) if out_proj else context
    return Answer


class Subclassed(MultiHeadAttention):
    """The course's module itself: right by construction."""


class WithSDPA(Solution):
    def forward(self, x, padding_mask=None):
        B, T, _ = x.shape

        def split(features):
            return features.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

        allowed = self.causal_mask[:T, :T]
        if padding_mask is not None:
            allowed = allowed & padding_mask[:, None, None, :]
        context = F.scaled_dot_product_attention(
            split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x)),
            attn_mask=allowed, dropout_p=self.dropout.p if self.training else 0.0)
        context = torch.nan_to_num(context, 0.0)  # rows with no key, whatever the version
        return self.out_proj(context.transpose(1, 2).reshape(B, T, self.d_out))


class NeedsAMask(Solution):
    def forward(self, x, padding_mask):
        return super().forward(x, padding_mask)


MHA_RIGHT = {
    "solution": Solution,
    "helpers' attention_weights": attention_module(),
    "scaled_dot_product_attention": WithSDPA,
    "the course's module, subclassed": Subclassed,
}

MHA_WRONG = {
    "padding ignored": (attention_module(keys=False), "padding mask is not used"),
    "(B, 1, T) mask, B = H": (attention_module(keys=False, no_heads_axis=True),
                              "head h of every sequence got the padding of sequence h"),
    "padded queries hidden": (attention_module(keys=False, rows=True),
                              "hides padded queries (rows) instead of keys"),
    "allowed &= on the buffer": (attention_module(keys=False, in_place=True),
                                 "cannot grow to (B, 1, T, T)"),
    "not causal": (attention_module(causal=False), "not causal"),
    "scaled by sqrt(d_out)": (attention_module(scale="d_out"), "sqrt(head_dim)"),
    "not scaled": (attention_module(scale="none"), "not scaled"),
    "heads split wrongly": (attention_module(split=False), "mixes tokens into heads"),
    "heads merged wrongly": (attention_module(merge=False), "merged without moving the tokens"),
    "no out_proj": (attention_module(out_proj=False), "out_proj is not applied"),
    "NaN rows": (attention_module(safe=False), "NaN at the padded positions"),
    "mask saved": (attention_module(persistent_mask=True), "it also saves causal_mask"),
    "other layer names": (attention_module(names=("query", "key", "value", "out")),
                          "it lacks W_key.weight"),
    "dropout always on": (attention_module(always_drop=True),
                          "dropout must be off in eval mode"),
    "no dropout": (attention_module(dropout_on=False), "never dropped"),
    "padding_mask required": (NeedsAMask, "given alone, x of shape (1, 6, 5) with no padding mask"),
    "not a module": (lambda *args: None, "not an nn.Module"),
}

TABLES = {
    check_safe_masked_softmax: (SAFE_RIGHT, SAFE_WRONG),
    check_padded_multi_head_attention: (MHA_RIGHT, MHA_WRONG),
}

test_mha_right, test_mha_wrong = table_tests(
    check_padded_multi_head_attention, MHA_RIGHT, MHA_WRONG,
    giveaways=["padding_mask[:, None, None, :]"])
