"""Notebook 01's exercise checks: a table of right and wrong answers per check."""

import numpy as np
import torch

from helpers.checks.self_attention import (
    check_batched_self_attention_weights,
    check_self_attention_weights,
    check_stable_softmax,
)
from tests.checks.support import table_tests

NOTEBOOK_D_K = 2  # what a learner reads from the notebook's globals

# ---------------------------------------------------------------- stable softmax


def softmax_max_shift(scores):
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    return torch.exp(shifted) / torch.exp(shifted).sum(dim=-1, keepdim=True)


def softmax_loop(scores):
    rows = scores.reshape(-1, scores.shape[-1])
    out = torch.empty_like(rows)
    for i, row in enumerate(rows):
        exponentials = torch.exp(row - row.max())
        out[i] = exponentials / exponentials.sum()
    return out.reshape(scores.shape)


def softmax_numpy(scores):
    values = scores.numpy()
    exponentials = np.exp(values - values.max(axis=-1, keepdims=True))
    return torch.from_numpy(exponentials / exponentials.sum(axis=-1, keepdims=True))


def softmax_float64(scores):
    return softmax_max_shift(scores.double())


def shift_by(shift):
    def softmax(scores):
        exponentials = torch.exp(scores - shift(scores))
        return exponentials / exponentials.sum(dim=-1, keepdim=True)
    return softmax


def in_place(scores):
    scores -= scores.max(dim=-1, keepdim=True).values
    return torch.exp(scores) / torch.exp(scores).sum(dim=-1, keepdim=True)


SOFTMAX_RIGHT = {
    "max shift": softmax_max_shift,
    "loop over rows": softmax_loop,
    "NumPy": softmax_numpy,
    "float64": softmax_float64,
    "logsumexp": lambda s: torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True)),
    "torch.softmax": lambda s: torch.softmax(s, dim=-1),
}

SOFTMAX_WRONG = {
    "no shift": (shift_by(lambda s: 0), "exp(1000)"),
    "min shift": (shift_by(lambda s: s.min(dim=-1, keepdim=True).values), "MINIMUM"),
    "mean shift": (shift_by(lambda s: s.mean(dim=-1, keepdim=True)), "MEAN"),
    "min shift in float64": (lambda s: shift_by(lambda t: t.min(-1, keepdim=True).values)(
        s.double()), "NaN for a row with a wide range"),
    "global max": (shift_by(lambda s: s.max()), "maximum of the whole tensor"),
    "max without keepdim": (shift_by(lambda s: s.max(dim=-1).values), "max without keepdim"),
    "max without .values": (shift_by(lambda s: s.max(dim=-1, keepdim=True)),
                            "return a pair, the values and their indices"),
    "sum without keepdim": (lambda s: torch.exp(s - s.max(-1, keepdim=True).values)
                            / torch.exp(s - s.max(-1, keepdim=True).values).sum(-1),
                            "sum without keepdim"),
    "no division": (lambda s: torch.exp(s - s.max(-1, keepdim=True).values),
                    "not divided by their row's sum"),
    "global sum": (lambda s: torch.exp(s - s.max(-1, keepdim=True).values)
                   / torch.exp(s - s.max(-1, keepdim=True).values).sum(), "whole tensor"),
    "dim=0": (lambda s: torch.softmax(s, dim=0) if s.ndim > 1 else s, "dimension 0"),
    "2-D only, dim=1": (lambda s: torch.softmax(s, dim=1 if s.ndim > 1 else 0), "dimension 1 of 3"),
    "log_softmax": (lambda s: torch.log_softmax(s, dim=-1), "log-probabilities"),
    "no return": (lambda s: None, "`return`"),
    "a list": (lambda s: softmax_max_shift(s).tolist(), "returned a list"),
    "a NumPy array": (lambda s: softmax_max_shift(s).numpy(), "returned a NumPy array"),
    "a float": (lambda s: softmax_max_shift(s).sum().item(), "returned a float"),
    "another device": (lambda s: softmax_max_shift(s).to("meta"), "on device 'meta'"),
    "in place": (in_place, "changed its argument `scores` in place"),
    "NaN": (lambda s: torch.full_like(s, float("nan")), "NaN or inf"),
    "raises": (lambda s: s.softmax(), "raised TypeError"),
}

test_softmax_right, test_softmax_wrong = table_tests(
    check_stable_softmax, SOFTMAX_RIGHT, SOFTMAX_WRONG, giveaways=["keepdim=True"])

# ---------------------------------------------------------------- attention weights


def weights_standard(x, W_query, W_key):
    queries, keys = W_query(x), W_key(x)
    return torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)


def weights_einsum(x, W_query, W_key):
    queries, keys = W_query(x), W_key(x)
    scores = torch.einsum("...qd,...kd->...qk", queries, keys)
    return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)


def weights_loop(x, W_query, W_key):
    queries, keys = W_query(x), W_key(x)
    rows = [torch.softmax(keys @ query / keys.shape[-1] ** 0.5, dim=-1) for query in queries]
    return torch.stack(rows)


def weights_float64(x, W_query, W_key):
    queries, keys = W_query(x).double(), W_key(x).double()
    return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)


def weights_by_the_weight(x, W_query, W_key):
    def project(layer):
        bias = 0 if layer.bias is None else layer.bias
        return x @ layer.weight.T + bias
    queries, keys = project(W_query), project(W_key)
    return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)


def weights_with(transform):
    def function(x, W_query, W_key):
        return transform(x, W_query(x), W_key(x))
    return function


def x_changed(x, W_query, W_key):
    x.mul_(2)
    return weights_standard(x / 2, W_query, W_key)


WEIGHTS_RIGHT = {
    "transpose": weights_standard,
    "einsum": weights_einsum,
    "loop over queries": weights_loop,
    "float64": weights_float64,
    "weights by hand, bias included": weights_by_the_weight,
}

WEIGHTS_WRONG = {
    "unscaled": (weights_with(lambda x, q, k: torch.softmax(q @ k.T, -1)), "not scaled"),
    "sqrt(d_in)": (weights_with(lambda x, q, k: torch.softmax(q @ k.T / x.shape[-1] ** 0.5, -1)),
                   "sqrt(d_in)"),
    "d_k, not its root": (weights_with(lambda x, q, k: torch.softmax(q @ k.T / k.shape[-1], -1)),
                          "its square root"),
    "columns": (weights_with(lambda x, q, k: torch.softmax(q @ k.T / k.shape[-1] ** 0.5, 0)),
                "columns sum to 1"),
    "keys @ queries": (weights_with(lambda x, q, k: torch.softmax(k @ q.T / k.shape[-1] ** 0.5,
                                                                  -1)), "keys @ queries"),
    "raw inputs": (weights_with(lambda x, q, k: torch.softmax(x @ x.T / k.shape[-1] ** 0.5, -1)),
                   "raw inputs"),
    "the notebook's d_k": (weights_with(lambda x, q, k: torch.softmax(q @ k.T / NOTEBOOK_D_K**0.5,
                                                                      -1)),
                           "a size of the notebook's running example"),
    "keys.shape[0]": (weights_with(lambda x, q, k: torch.softmax(q @ k.T / k.shape[0] ** 0.5,
                                                                 -1)), "sqrt(T)"),
    "x @ W.weight": (lambda x, W_query, W_key: weights_with(lambda x, q, k: torch.softmax(
        q @ k.T / k.shape[-1] ** 0.5, -1))(x, lambda t: t @ W_query.weight,
                                            lambda t: t @ W_key.weight),
                     "(out_features, in_features)"),
    "bias left out": (lambda x, W_query, W_key: weights_with(lambda x, q, k: torch.softmax(
        q @ k.T / k.shape[-1] ** 0.5, -1))(x, lambda t: t @ W_query.weight.T,
                                            lambda t: t @ W_key.weight.T), "biases are left out"),
    "keys not transposed": (weights_with(lambda x, q, k: torch.softmax(q @ k, -1)),
                            "cannot be multiplied"),
    "no return": (lambda x, W_query, W_key: None, "`return`"),
    "another device": (lambda x, W_query, W_key: weights_standard(x, W_query, W_key).to("meta"),
                       "on device 'meta'"),
    "x changed in place": (x_changed, "changed its argument `x` in place"),
}

test_weights_right, test_weights_wrong = table_tests(
    check_self_attention_weights, WEIGHTS_RIGHT, WEIGHTS_WRONG)

# ---------------------------------------------------------------- batches


def batched_loop(x, W_query, W_key):
    if x.ndim == 2:
        return weights_standard(x, W_query, W_key)
    return torch.stack([weights_standard(sequence, W_query, W_key) for sequence in x])


def batched_float64(x, W_query, W_key):
    queries, keys = W_query(x).double(), W_key(x).double()
    return torch.softmax(queries @ keys.mT / keys.shape[-1] ** 0.5, dim=-1)


def batch_only(x, W_query, W_key):
    queries, keys = W_query(x), W_key(x)
    return torch.softmax(torch.bmm(queries, keys.transpose(1, 2)) / keys.shape[-1] ** 0.5, -1)


BATCHED_RIGHT = {
    "transpose(-2, -1)": weights_standard,
    "einsum": weights_einsum,
    "loop over the batch": batched_loop,
    "float64, mT": batched_float64,
}

BATCHED_WRONG = {
    "keys.T": (weights_with(lambda x, q, k: torch.softmax(q @ k.T / k.shape[-1] ** 0.5, -1)),
               "reverses ALL of them"),
    "keys.transpose(0, 1)": (weights_with(lambda x, q, k: torch.softmax(
        q @ k.transpose(0, 1) / k.shape[-1] ** 0.5, -1)),
        "it works on one sequence but not on a batch"),
    "3-D only: softmax(dim=2)": (weights_with(lambda x, q, k: torch.softmax(
        q @ k.mT / k.shape[-1] ** 0.5, dim=2)), "counts dimensions from the front"),
    "2-D habit: softmax(dim=1)": (weights_with(lambda x, q, k: torch.softmax(
        q @ k.mT / k.shape[-1] ** 0.5, dim=1)), "columns sum to 1"),
    "keys.shape[1] as d_k": (weights_with(lambda x, q, k: torch.softmax(
        q @ k.mT / k.shape[1] ** 0.5, -1)), "sqrt(T)"),
    "batch only (bmm)": (batch_only, "on one sequence"),
    "the notebook's d_k": (weights_with(lambda x, q, k: torch.softmax(
        q @ k.mT / NOTEBOOK_D_K**0.5, -1)), "a size of the notebook's running example"),
    "unscaled": (weights_with(lambda x, q, k: torch.softmax(q @ k.mT, -1)), "not scaled"),
    "a list per sequence": (lambda x, W_query, W_key: [weights_standard(s, W_query, W_key)
                                                       for s in x] if x.ndim == 3
                            else weights_standard(x, W_query, W_key), "returned a list"),
    "another device": (lambda x, W_query, W_key: weights_standard(x, W_query, W_key).to("meta"),
                       "on device 'meta'"),
    "keys @ queries": (weights_with(lambda x, q, k: torch.softmax(k @ q.mT / k.shape[-1] ** 0.5,
                                                                  -1)), "keys @ queries"),
}

test_batched_right, test_batched_wrong = table_tests(
    check_batched_self_attention_weights, BATCHED_RIGHT, BATCHED_WRONG,
    giveaways=["transpose(-2, -1)"])

TABLES = {
    check_stable_softmax: (SOFTMAX_RIGHT, SOFTMAX_WRONG),
    check_self_attention_weights: (WEIGHTS_RIGHT, WEIGHTS_WRONG),
    check_batched_self_attention_weights: (BATCHED_RIGHT, BATCHED_WRONG),
}
