"""Notebook 03's exercise checks: a table of right and wrong answers per check."""

import numpy as np
import torch
import torch.nn.functional as F

from helpers.attention import attention_dropout, attention_weights
from helpers.checks.dropout import (
    check_causal_context,
    check_inference_weights,
    check_my_dropout,
)
from helpers.checks.feedback import INCORRECT
from tests.checks.support import table_tests

# ---------------------------------------------------------------- my_dropout


def dropout_right(weights, p, generator=None):
    if p == 1:
        return torch.zeros_like(weights)
    keep = torch.rand(weights.shape, generator=generator) >= p
    return weights * keep / (1 - p)


def dropout_loop(weights, p, generator=None):
    if p == 1:
        return torch.zeros_like(weights)
    flat = weights.flatten()
    out = torch.zeros_like(flat)
    for i in range(flat.numel()):
        if torch.rand(1, generator=generator).item() >= p:
            out[i] = flat[i] / (1 - p)
    return out.view(weights.shape)


def dropout_float64(weights, p, generator=None):
    if p == 1:
        return torch.zeros_like(weights)
    keep = torch.rand(weights.shape, generator=generator, dtype=torch.float64) >= p
    return (weights.double() * keep / (1 - p)).to(weights.dtype)


def dropout_uniform(weights, p, generator=None):
    if p == 1:
        return torch.zeros_like(weights)
    uniform = torch.empty_like(weights).uniform_(0, 1, generator=generator)
    return torch.where(uniform >= p, weights / (1 - p), 0.0)


def with_keep(build):
    """A dropout whose kept entries are build(weights, keep, p); p = 0 and 1 handled right."""
    def function(weights, p, generator=None):
        if p in (0, 1):
            return dropout_right(weights, p, generator)
        keep = torch.rand(weights.shape, generator=generator) >= p
        return build(weights, keep, p)
    return function


def self_seeded(weights, p, generator=None):
    torch.manual_seed(0)  # a learner's habit: seed inside the function
    return dropout_right(weights, p)


def numpy_rng(weights, p, generator=None):
    if p == 1:
        return torch.zeros_like(weights)
    keep = np.random.default_rng(0).random(weights.shape) >= p
    return weights * torch.from_numpy(keep) / (1 - p)


def two_dims_only(weights, p, generator=None):
    if p == 1:
        return torch.zeros_like(weights)
    keep = torch.rand(weights.shape[0], weights.shape[1], generator=generator) >= p
    return weights * keep / (1 - p)


DROPOUT_RIGHT = {
    "rand >= p": dropout_right,
    "loop over entries": dropout_loop,
    "float64 draws": dropout_float64,
    "uniform_ and where": dropout_uniform,
    "bernoulli (the helpers')": lambda w, p, generator=None: attention_dropout(
        w, p, generator=generator)[0],
}

DROPOUT_WRONG = {
    "no 1/(1-p)": (with_keep(lambda w, keep, p: w * keep), "not scaled"),
    "times (1-p)": (with_keep(lambda w, keep, p: w * keep * (1 - p)), "multiplied by 1 - p"),
    "divided by p": (with_keep(lambda w, keep, p: w * keep / p), "divided by p"),
    "other factor": (with_keep(lambda w, keep, p: w * keep * 3), "multiplied by 3.000"),
    "keeps where rand < p": (with_keep(lambda w, keep, p: w * ~keep / (1 - p)),
                             "keeps where the random number is below p"),
    "keeps too many": (with_keep(lambda w, keep, p: w * (keep | (torch.arange(w.numel())
                                                                 .view(w.shape) % 2 == 0))
                                 / (1 - p)), "about 1 - p = 0.70 should be kept"),
    "uneven factors": (with_keep(lambda w, keep, p: w * keep / (1 - p)
                                 * (1 + keep.cumsum(-1) / 1000)), "not all multiplied by the "
                                                                   "same factor"),
    "in place": (with_keep(lambda w, keep, p: w.mul_(keep / (1 - p))),
                 "changed its argument `weights` in place"),
    "ignores the generator": (lambda w, p, generator=None: dropout_right(w, p),
                              "generators seeded alike"),
    "seeds itself": (self_seeded, "seeded differently gave the same result"),
    "NumPy's own generator": (numpy_rng, "seeded differently gave the same result"),
    "2-D only": (two_dims_only, "raised RuntimeError"),
    "0/0 at p = 1": (lambda w, p, generator=None: w * (torch.rand(w.shape, generator=generator)
                                                        >= p) / (1 - p), "0/0"),
    "drops at p = 0": (lambda w, p, generator=None: dropout_right(w, max(p, 0.1), generator),
                       "p = 0 must give the weights back"),
    "everything dropped": (lambda w, p, generator=None: torch.zeros_like(w), "every entry"),
    "reseeds the generator": (lambda w, p, generator: dropout_right(
        w, p, generator.manual_seed(0)), "seeded differently gave the same result"),
    "a generator required": (lambda w, p, generator=None: dropout_right(w, p, generator)
                             * torch.ones(1, device=generator.device), "with no generator"),
    "NaN": (lambda w, p, generator=None: torch.full_like(w, float("nan")), "NaN"),
    "no return": (lambda w, p, generator=None: None, "`return`"),
    "another device": (lambda w, p, generator=None: dropout_right(w, p, generator).to("meta"),
                       "on device 'meta'"),
}

test_dropout_right, test_dropout_wrong = table_tests(
    check_my_dropout, DROPOUT_RIGHT, DROPOUT_WRONG,
    giveaways=["generator=generator", "rand(weights.shape"])


def test_my_dropout_check_leaves_the_global_generator_as_it_was():
    state = torch.get_rng_state()
    check_my_dropout(self_seeded)
    check_my_dropout(dropout_right)
    assert torch.equal(torch.get_rng_state(), state)


# ---------------------------------------------------------------- inference weights

INFERENCE_RIGHT = {
    "times (1 - p)": lambda w, p: w * (1 - p),
    "minus p times": lambda w, p: w - w * p,
    "NumPy": lambda w, p: torch.from_numpy(w.numpy() * (1 - p)),
    "float64": lambda w, p: w.double() * (1 - p),
    "torch.mul": lambda w, p: torch.mul(w, 1 - p),
}


def inference_in_place(weights, p):
    return weights.mul_(1 - p)


INFERENCE_WRONG = {
    "inverted dropout's scaling": (lambda w, p: w / (1 - p), "TRAINING-time factor"),
    "unchanged": (lambda w, p: w.clone(), "unchanged weights are larger"),
    "times p": (lambda w, p: w * p, "multiplied by p"),
    "renormalised": (lambda w, p: w * (1 - p) / (w * (1 - p)).sum(-1, keepdim=True),
                     "rescaled to sum to 1"),
    "squared": (lambda w, p: w * (1 - p) ** 2, "applied twice"),
    "other": (lambda w, p: w * (1 - p) + 0.01, "on average in training"),
    "wrong shape": (lambda w, p: (w * (1 - p))[0], "returned shape (3, 5, 5)"),
    "in place": (inference_in_place, "changed its argument `weights` in place"),
    "a number": (lambda w, p: 1 - p, "returned a float"),
    "no return": (lambda w, p: None, "`return`"),
    "another device": (lambda w, p: (w * (1 - p)).to("meta"), "on device 'meta'"),
}

test_inference_right, test_inference_wrong = table_tests(
    check_inference_weights, INFERENCE_RIGHT, INFERENCE_WRONG)

# ---------------------------------------------------------------- causal context


def scores_of(queries, keys):
    return queries @ keys.T / keys.shape[-1] ** 0.5


def causal(scores):
    T = scores.shape[-1]
    return scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))


def context_right(queries, keys, values, dropout):
    return dropout(attention_weights(queries, keys, is_causal=True)) @ values


def context_by_hand(queries, keys, values, dropout):
    weights = torch.softmax(causal(scores_of(queries, keys)), dim=-1)
    return dropout(weights) @ values


def context_functional(queries, keys, values, dropout):
    weights = attention_weights(queries, keys, is_causal=True)
    return F.dropout(weights, dropout.p, training=dropout.training) @ values


def context_einsum(queries, keys, values, dropout):
    scores = torch.einsum("qd,kd->qk", queries, keys) / keys.shape[-1] ** 0.5
    weights = dropout(torch.softmax(causal(scores), dim=-1))
    return torch.einsum("qk,kv->qv", weights, values)


def values_changed(queries, keys, values, dropout):
    values.zero_()
    return context_right(queries, keys, values, dropout)


CONTEXT_RIGHT = {
    "helpers' weights": context_right,
    "by hand": context_by_hand,
    "F.dropout with the module's mode": context_functional,
    "einsum": context_einsum,
}

CONTEXT_WRONG = {
    "dropout on the scores": (lambda q, k, v, d: torch.softmax(causal(d(scores_of(q, k))), -1)
                              @ v, "before the softmax"),
    "dropout on the masked scores": (lambda q, k, v, d: torch.softmax(
        d(causal(scores_of(q, k))), -1) @ v, "before the softmax"),
    "dropout on the context": (lambda q, k, v, d: d(attention_weights(q, k, is_causal=True) @ v),
                               "applied to the context vectors"),
    "dropout on the values": (lambda q, k, v, d: attention_weights(q, k, is_causal=True) @ d(v),
                              "applied to the values"),
    "no dropout": (lambda q, k, v, d: attention_weights(q, k, is_causal=True) @ v,
                   "no dropout in training mode"),
    "not causal": (lambda q, k, v, d: d(torch.softmax(scores_of(q, k), -1)) @ v, "not causal"),
    "scaling undone": (lambda q, k, v, d: d(attention_weights(q, k, is_causal=True))
                       * (1 - d.p) @ v, "do not undo it"),
    "renormalised after dropout": (lambda q, k, v, d: F.normalize(
        d(attention_weights(q, k, is_causal=True)), p=1, dim=-1) @ v, "renormalised after"),
    "always drops": (lambda q, k, v, d: F.dropout(attention_weights(q, k, is_causal=True), d.p,
                                                  training=True) @ v, "still dropped"),
    "eval mode differs otherwise": (lambda q, k, v, d: context_right(q, k, v, d)
                                    * (1 if d.training else 2), "without dropout"),
    "SDPA's dropout_p, whatever the mode": (lambda q, k, v, d: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, dropout_p=d.p), "module was never called"),
    "not scaled by sqrt(d_k)": (lambda q, k, v, d: d(attention_weights(
        q, k, is_causal=True, scale=1.0)) @ v, "not divided by sqrt(d_k)"),
    "drops twice": (lambda q, k, v, d: d(d(attention_weights(q, k, is_causal=True))) @ v,
                    "called 2 times"),
    "values changed in place": (values_changed, "changed its argument `values` in place"),
    "other": (lambda q, k, v, d: context_right(q, k, v, d) + 1, "not the context vectors"),
    "no return": (lambda q, k, v, d: None, "`return`"),
    "another device": (lambda q, k, v, d: context_right(q, k, v, d).to("meta"),
                       "on device 'meta'"),
}

test_context_right, test_context_wrong = table_tests(
    check_causal_context, CONTEXT_RIGHT, CONTEXT_WRONG)


def test_causal_context_cannot_change_the_checks_own_module():
    def sabotage(queries, keys, values, dropout):
        dropout.p = 0.0  # a learner's slip on the module it was given
        return context_right(queries, keys, values, dropout)

    # With p changed the answer has no dropout: the check still compares with its own p.
    feedback = check_causal_context(sabotage)
    assert feedback.status == INCORRECT and "no dropout in training mode" in feedback.message


TABLES = {
    check_my_dropout: (DROPOUT_RIGHT, DROPOUT_WRONG),
    check_inference_weights: (INFERENCE_RIGHT, INFERENCE_WRONG),
    check_causal_context: (CONTEXT_RIGHT, CONTEXT_WRONG),
}
