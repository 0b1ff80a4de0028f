"""Notebook 04's exercise checks: a table of right and wrong answers per check. The learner's
class is built by the check, never an instance of theirs."""

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import CausalAttention, attention_weights
from helpers.checks import INCORRECT
from helpers.checks.causal_attention import check_buffer, check_causal_attention_forward
from tests.checks.support import table_tests

NOTEBOOK_T, NOTEBOOK_D_K = 6, 2

# ---------------------------------------------------------------- the sliced mask


def attention_class(steps):
    """A CausalAttention subclass whose forward gets (weights, values) from
    steps(module, x, queries, keys, values), then drops the weights and mixes the values."""
    class Answer(CausalAttention):
        def forward(self, x):
            weights, values = steps(self, x, self.W_query(x), self.W_key(x), self.W_value(x))
            return self.dropout(weights) @ values
    return Answer


def masked(scores, mask, fill=float("-inf")):
    return scores.masked_fill(~mask, fill)


def scores_of(q, k, scale=None):
    return q @ k.transpose(-2, -1) / (k.shape[-1] ** 0.5 if scale is None else scale)


def corner(module, x):
    T = x.shape[1]
    return module.causal_mask[:T, :T]


def standard(m, x, q, k, v, fill=float("-inf")):
    return torch.softmax(masked(scores_of(q, k), corner(m, x), fill), -1), v


class ReassignsTheBuffer(CausalAttention):
    def forward(self, x):
        T = x.shape[1]
        self.causal_mask = self.causal_mask[:T, :T]  # the slip: the buffer becomes the slice
        weights = attention_weights(self.W_query(x), self.W_key(x), attn_mask=self.causal_mask)
        return self.dropout(weights) @ self.W_value(x)


class NoDropout(CausalAttention):
    def forward(self, x):
        queries, keys = self.W_query(x), self.W_key(x)
        return attention_weights(queries, keys, attn_mask=corner(self, x)) @ self.W_value(x)


class DropoutOnScores(CausalAttention):
    def forward(self, x):
        scores = self.dropout(scores_of(self.W_query(x), self.W_key(x)))
        return torch.softmax(masked(scores, corner(self, x)), -1) @ self.W_value(x)


class AlwaysDrops(CausalAttention):
    def forward(self, x):
        weights = attention_weights(self.W_query(x), self.W_key(x), attn_mask=corner(self, x))
        return F.dropout(weights, self.dropout.p, training=True) @ self.W_value(x)


class DropsTwice(CausalAttention):
    def forward(self, x):
        weights = attention_weights(self.W_query(x), self.W_key(x), attn_mask=corner(self, x))
        return self.dropout(self.dropout(weights)) @ self.W_value(x)


class EinsumAnswer(CausalAttention):
    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.einsum("btd,bsd->bts", queries, keys) / keys.shape[-1] ** 0.5
        weights = torch.softmax(masked(scores, corner(self, x)), dim=-1)
        return torch.einsum("bts,bsd->btd", self.dropout(weights), values)


class Float64Inside(CausalAttention):
    def forward(self, x):
        queries, keys = self.W_query(x).double(), self.W_key(x).double()
        weights = attention_weights(queries, keys, attn_mask=corner(self, x)).float()
        return self.dropout(weights) @ self.W_value(x)


class WeightsReturned(CausalAttention):
    def forward(self, x):
        return attention_weights(self.W_query(x), self.W_key(x), attn_mask=corner(self, x))


class ValuesTimesWeights(CausalAttention):
    def forward(self, x):
        weights = attention_weights(self.W_query(x), self.W_key(x), attn_mask=corner(self, x))
        return self.W_value(x) @ self.dropout(weights)


class DropoutPerRow(CausalAttention):
    """Right: each weight is dropped once, one query row at a time (another random order)."""

    def forward(self, x):
        weights = attention_weights(self.W_query(x), self.W_key(x), attn_mask=corner(self, x))
        rows = [self.dropout(weights[:, i]) for i in range(x.shape[1])]  # T calls, (B, T) each
        return torch.stack(rows, dim=1) @ self.W_value(x)


class DropoutAlsoOnTheOutput(CausalAttention):
    def forward(self, x):
        weights = attention_weights(self.W_query(x), self.W_key(x), attn_mask=corner(self, x))
        return self.dropout(self.dropout(weights) @ self.W_value(x))


def through_helper(mask_of):
    """An answer that passes mask_of(module, T) to attention_weights."""
    class Answer(CausalAttention):
        def forward(self, x):
            mask = mask_of(self, x.shape[1])
            weights = attention_weights(self.W_query(x), self.W_key(x), attn_mask=mask)
            return self.dropout(weights) @ self.W_value(x)
    return Answer


class XChanged(CausalAttention):
    def forward(self, x):
        result = attention_class(standard).forward(self, x)
        x.zero_()
        return result


FORWARD_RIGHT = {
    "sliced buffer": attention_class(standard),
    "helpers": attention_class(lambda m, x, q, k, v: (attention_weights(
        q, k, attn_mask=corner(m, x)), v)),
    "bottom-right corner": attention_class(lambda m, x, q, k, v: (torch.softmax(masked(
        scores_of(q, k), m.causal_mask[-x.shape[1]:, -x.shape[1]:]), -1), v)),
    "einsum": EinsumAnswer,
    "float64 inside": Float64Inside,
    "hard-coded -1e9": attention_class(lambda m, x, q, k, v: standard(m, x, q, k, v, -1e9)),
    "dropout row by row": DropoutPerRow,
}

FORWARD_REMARKS = {"hard-coded -1e9": "float16",
                   "dropout row by row": "once per query row"}

FORWARD_WRONG = {
    "not sliced": (attention_class(lambda m, x, q, k, v: (torch.softmax(
        masked(scores_of(q, k), m.causal_mask), -1), v)), "the mask was not cut"),
    "not sliced, through attention_weights": (through_helper(lambda m, T: m.causal_mask),
                                              "the mask was not cut"),
    "rows only": (attention_class(lambda m, x, q, k, v: (torch.softmax(
        masked(scores_of(q, k), m.causal_mask[:x.shape[1]]), -1), v)),
        "cut along the queries only"),
    "[:T], through attention_weights": (through_helper(lambda m, T: m.causal_mask[:T]),
                                        "[:T] cuts only the first dimension"),
    "keys only, through attention_weights": (through_helper(lambda m, T: m.causal_mask[:, :T]),
                                             "cut along the keys only"),
    "the notebook's T": (attention_class(lambda m, x, q, k, v: (torch.softmax(masked(
        scores_of(q, k), m.causal_mask[:NOTEBOOK_T, :NOTEBOOK_T]), -1), v)),
        "cut to a fixed size, (6, 6)"),
    "values @ weights": (ValuesTimesWeights, "multiplied by the weights in the wrong order"),
    "buffer reassigned to its slice": (ReassignsTheBuffer, "replaced the mask buffer"),
    "inverted": (attention_class(lambda m, x, q, k, v: (torch.softmax(scores_of(q, k).masked_fill(
        corner(m, x), float("-inf")), -1), v)), "mask is inverted"),
    "unscaled": (attention_class(lambda m, x, q, k, v: (torch.softmax(
        masked(scores_of(q, k, 1.0), corner(m, x)), -1), v)), "not scaled"),
    "sqrt(d_in)": (attention_class(lambda m, x, q, k, v: (torch.softmax(
        masked(scores_of(q, k, x.shape[-1] ** 0.5), corner(m, x)), -1), v)), "sqrt(d_in)"),
    "the notebook's d_k": (attention_class(lambda m, x, q, k, v: (torch.softmax(
        masked(scores_of(q, k, NOTEBOOK_D_K**0.5), corner(m, x)), -1), v)),
        "a size of the notebook's example"),
    "query axis": (attention_class(lambda m, x, q, k, v: (torch.softmax(
        masked(scores_of(q, k), corner(m, x)), 1), v)), "along the queries"),
    "no mask": (attention_class(lambda m, x, q, k, v: (torch.softmax(scores_of(q, k), -1), v)),
                "nothing is masked"),
    "zeroed after": (attention_class(lambda m, x, q, k, v: (torch.softmax(
        scores_of(q, k), -1) * corner(m, x), v)), "without renormalising"),
    "weights returned": (WeightsReturned, "returned shape (2, 7, 7)"),
    "no dropout": (NoDropout, "no dropout in training mode"),
    "dropout on the scores": (DropoutOnScores, "not the attention weights"),
    "always drops": (AlwaysDrops, "in eval mode"),
    "drops twice": (DropsTwice, "called 2 times on the whole attention weights"),
    "dropout on the output too": (DropoutAlsoOnTheOutput, "called 2 times, on tensors of "
                                                          "shapes (3, 6, 6), (3, 6, 4)"),
    "x changed in place": (XChanged, "changed its argument `x` in place"),
    "keys not transposed": (attention_class(lambda m, x, q, k, v: (q @ k, v)),
                            "the keys must be transposed"),
}

test_forward_right, test_forward_wrong = table_tests(
    check_causal_attention_forward, FORWARD_RIGHT, FORWARD_WRONG,
    remarks=FORWARD_REMARKS, giveaways=["[:T, :T]"])


def test_dropout_in_pieces_is_right_but_draws_otherwise_than_the_class():
    """The remark's claim, measured: the same seed, the same distribution, other draws."""
    torch.manual_seed(0)
    reference = CausalAttention(4, 4, 6, dropout=0.5).train()
    rows = DropoutPerRow(4, 4, 6, dropout=0.5).train()
    rows.load_state_dict(reference.state_dict())
    x = torch.randn(2, 6, 4)
    torch.manual_seed(1)
    one_call = reference(x)
    torch.manual_seed(1)
    per_row = rows(x)
    assert not torch.allclose(one_call, per_row)


def test_a_remark_hint_goes_further_than_the_remark():
    for style in FORWARD_REMARKS:
        feedback = check_causal_attention_forward(FORWARD_RIGHT[style])
        hint = check_causal_attention_forward.hint().text
        assert hint.startswith("nothing to fix") and hint != "nothing to fix: the answer is right."
        assert feedback.remark not in hint


def test_forward_check_reports_a_class_that_does_not_take_the_weights():
    class ExtraWeights(CausalAttention):
        def __init__(self, *args):
            super().__init__(*args)
            self.extra = nn.Linear(2, 2)

    feedback = check_causal_attention_forward(ExtraWeights)
    assert feedback.status == INCORRECT and "do not load" in feedback.message


# ---------------------------------------------------------------- the buffer

FACTORS = [1.0, 0.5, 0.25]


def scaler_class(store, forward=lambda module, x: x * module.factors):
    """An nn.Module whose __init__ runs store(self, factors) and whose forward is given."""
    class Answer(nn.Module):
        def __init__(self):
            super().__init__()
            store(self, torch.tensor(FACTORS))

        def forward(self, x):
            return forward(self, x)
    return Answer


def register_then_assign(module, factors):
    module.register_buffer("factors", None, persistent=False)
    module.factors = factors  # assigning to a registered buffer's name keeps it a buffer


BUFFER_RIGHT = {
    "register_buffer": scaler_class(lambda m, f: m.register_buffer("factors", f,
                                                                   persistent=False)),
    "positional persistent": scaler_class(lambda m, f: m.register_buffer("factors", f, False)),
    "registered, then assigned": scaler_class(register_then_assign),
    "built from a list of floats": scaler_class(lambda m, f: m.register_buffer(
        "factors", torch.tensor([1, 0.5, 0.25], dtype=torch.float64), persistent=False)),
}

BUFFER_WRONG = {
    "plain attribute": (scaler_class(lambda m, f: setattr(m, "factors", f)), "plain attribute"),
    "persistent buffer": (scaler_class(lambda m, f: m.register_buffer("factors", f)),
                          "saved in the state_dict"),
    "parameter": (scaler_class(lambda m, f: setattr(m, "factors", nn.Parameter(f))),
                  "nn.Parameter"),
    "frozen parameter": (scaler_class(lambda m, f: setattr(
        m, "factors", nn.Parameter(f, requires_grad=False))), "nn.Parameter"),
    "another name": (scaler_class(lambda m, f: m.register_buffer("scale", f, persistent=False)),
                     "no tensor `factors`"),
    "a list": (scaler_class(lambda m, f: setattr(m, "factors", f.tolist())),
               "no tensor `factors` (it has a list)"),
    "buffer of None": (scaler_class(lambda m, f: m.register_buffer("factors", None)),
                       "no tensor `factors`"),
    "other values": (scaler_class(lambda m, f: m.register_buffer("factors", f * 2,
                                                                 persistent=False)),
                     "should give the factors"),
    "forward changed": (scaler_class(lambda m, f: m.register_buffer("factors", f,
                                                                    persistent=False),
                                     lambda module, x: x + module.factors),
                        "should give the factors"),
    "raises": (scaler_class(lambda m, f: m.register_buffer("factors", [1.0])), "raised TypeError"),
}

test_buffer_right, test_buffer_wrong = table_tests(
    check_buffer, BUFFER_RIGHT, BUFFER_WRONG,
    giveaways=["register_buffer('factors'", 'register_buffer("factors"', "persistent=False"])

TABLES = {
    check_causal_attention_forward: (FORWARD_RIGHT, FORWARD_WRONG),
    check_buffer: (BUFFER_RIGHT, BUFFER_WRONG),
}
