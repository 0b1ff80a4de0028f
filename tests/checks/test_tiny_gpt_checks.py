"""Notebook 08's exercise checks: a table of right and wrong answers per check."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks import INCORRECT
from helpers.checks.feedback import run
from helpers.checks.tiny_gpt import (
    BLOCK_ERRORS,
    check_block_forward,
    check_next_token_loss,
    check_previous_token_score,
)
from helpers.gpt.model import Block
from helpers.gpt.training import previous_token_score
from tests.checks.support import table_tests

# ---------------------------------------------------------------- previous-token score


def score_by_diagonal(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))


def score_by_indexing(weights):
    T = weights.shape[-1]
    queries = torch.arange(1, T)  # (T - 1,)
    return weights[:, :, queries, queries - 1].mean(dim=(0, 2))  # (B, H, T - 1) -> (H,)


def score_by_loop(weights):
    B, H, T, _ = weights.shape
    scores = torch.zeros(H)
    for h in range(H):
        total = 0.0
        for b in range(B):
            for i in range(1, T):
                total += weights[b, h, i, i - 1].item()
        scores[h] = total / (B * (T - 1))
    return scores


def score_by_shifted_eye(weights):
    T = weights.shape[-1]
    one_back = torch.eye(T, T, dtype=weights.dtype).roll(-1, dims=1)  # 1 at (i, i - 1), (0, T-1)
    one_back[0] = 0  # query 0 has no token before it
    return (weights * one_back).sum(dim=-1)[..., 1:].mean(dim=(0, -1))


def score_numpy(weights):
    array = weights.numpy()
    T = array.shape[-1]
    values = np.stack([array[..., i, i - 1] for i in range(1, T)], axis=-1)  # (B, H, T - 1)
    return torch.from_numpy(values.mean(axis=(0, 2)))


SCORE_RIGHT = {
    "diagonal": score_by_diagonal,
    "indexing with arange": score_by_indexing,
    "loops": score_by_loop,
    "a shifted identity as a mask": score_by_shifted_eye,
    "NumPy": score_numpy,
    "the helper, then the batch mean": lambda w: previous_token_score(w).mean(dim=0),
}


def below(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1)


SCORE_WRONG = {
    "next token": (lambda w: w.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, -1)),
                   "just AFTER"),
    "main diagonal": (lambda w: w.diagonal(dim1=-2, dim2=-1).mean(dim=(0, -1)),
                      "weight on itself"),
    "query 0 counted": (lambda w: below(w).sum(dim=-1).mean(dim=0) / w.shape[-1],
                        "divided by T"),
    "sum": (lambda w: below(w).sum(dim=(0, -1)), "this is a sum"),
    "summed over the queries": (lambda w: below(w).sum(dim=-1).mean(dim=0),
                                "summed over the queries"),
    "all earlier tokens": (lambda w: w.tril(-1).sum(-1)[..., 1:].mean(dim=(0, -1)),
                           "ALL earlier tokens"),
    "max": (lambda w: below(w).max(dim=-1).values.mean(dim=0), "largest weight"),
    "one per sequence": (lambda w: below(w).mean(dim=-1), "one score per sequence and head"),
    "mean over the heads": (lambda w: below(w).mean(dim=(1, 2)), "averages over the heads"),
    "one number": (lambda w: below(w).mean(), "one number for all heads"),
    "mean over the batch only": (lambda w: below(w).mean(dim=0), "average over the sequences "
                                                                 "(dimension 0) and the queries"),
    "default diagonal dims": (lambda w: w.diagonal(offset=-1).mean(dim=(0, -1)),
                              "dimensions 0 and 1"),
    "max(dim) pair": (lambda w: below(w).max(dim=-1).mean(dim=0), "a pair"),
    "integers": (lambda w: (below(w) > 0.5).sum(dim=(0, -1)), "floating-point"),
    "no return": (lambda w: None, "`return`"),
    "another device": (lambda w: score_by_diagonal(w).to("meta"), "on device 'meta'"),
}

test_score_right, test_score_wrong = table_tests(
    check_previous_token_score, SCORE_RIGHT, SCORE_WRONG,
    giveaways=["offset=-1,dim1=-2,dim2=-1"])

# ---------------------------------------------------------------- next-token loss


def loss_flatten(logits, ids):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


def loss_classes_in_dim_1(logits, ids):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:])  # (B, V, T-1), (B, T-1)


def loss_by_hand(logits, ids):
    log_probabilities = logits[:, :-1].log_softmax(dim=-1)  # (B, T - 1, V)
    picked = log_probabilities.gather(-1, ids[:, 1:, None])  # (B, T - 1, 1)
    return -picked.mean()


def loss_reshape_float64(logits, ids):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].double().reshape(-1, V), ids[:, 1:].reshape(-1))


def loss_per_sequence(logits, ids):
    losses = [F.cross_entropy(logits[b, :-1], ids[b, 1:]) for b in range(len(ids))]
    return torch.stack(losses).mean()  # same length each: the mean of the means


LOSS_RIGHT = {
    "flatten": loss_flatten,
    "classes in dimension 1": loss_classes_in_dim_1,
    "log_softmax and gather": loss_by_hand,
    "reshape, float64": loss_reshape_float64,
    "a loop over the sequences": loss_per_sequence,
}


def flat(logits, ids, **options):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), ids.reshape(-1), **options)


LOSS_WRONG = {
    "no shift": (lambda lo, ids: flat(lo, ids), "no shift"),
    "cut, not shifted": (lambda lo, ids: flat(lo[:, :-1], ids[:, :-1]),
                         "the targets are not shifted"),
    "shifted the wrong way": (lambda lo, ids: flat(lo[:, 1:], ids[:, :-1]),
                              "shifted the wrong way"),
    "not shifted, 3-D": (lambda lo, ids: F.cross_entropy(lo[:, :-1], ids[:, 1:]),
                         "classes in dimension 1"),
    "flattened in other orders": (lambda lo, ids: flat(lo[:, :-1].transpose(0, 1), ids[:, 1:]),
                                  "different orders"),
    "view on a slice": (lambda lo, ids: F.cross_entropy(lo[:, :-1].view(-1, lo.shape[-1]),
                                                        ids[:, 1:].reshape(-1)),
                        "view cannot flatten a slice"),
    "targets not cut": (lambda lo, ids: flat(lo[:, :-1], ids), "different numbers of positions"),
    "sum": (lambda lo, ids: flat(lo[:, :-1], ids[:, 1:], reduction="sum"), "the sum"),
    "softmax first": (lambda lo, ids: flat(lo[:, :-1].softmax(-1), ids[:, 1:]),
                      "softmax before cross_entropy"),
    "nll_loss on logits": (lambda lo, ids: F.nll_loss(lo[:, :-1].reshape(-1, lo.shape[-1]),
                                                      ids[:, 1:].reshape(-1)),
                           "nll_loss expects log-probabilities"),
    "sign": (lambda lo, ids: -loss_flatten(lo, ids), "sign is flipped"),
    "log_softmax over the positions": (
        lambda lo, ids: -lo[:, :-1].log_softmax(dim=1).gather(-1, ids[:, 1:, None]).mean(),
        "over the positions"),
    "last pair only": (lambda lo, ids: F.cross_entropy(lo[:, -2], ids[:, -1]),
                       "only the last pair"),
    "per position": (lambda lo, ids: flat(lo[:, :-1], ids[:, 1:], reduction="none"),
                     "one number"),
    ".item()": (lambda lo, ids: loss_flatten(lo, ids).item(), "left the graph"),
    "detached": (lambda lo, ids: loss_flatten(lo.detach(), ids), "carries no gradient"),
    "no return": (lambda lo, ids: None, "`return`"),
}

test_loss_right, test_loss_wrong = table_tests(check_next_token_loss, LOSS_RIGHT, LOSS_WRONG)

# ---------------------------------------------------------------- a block's forward


class Solution(Block):
    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class OneLine(Block):
    def forward(self, x):
        h = x + self.attention(self.norm1(x))
        return h + self.mlp(self.norm2(h))


class ThroughWeights(Block):
    def forward(self, x):
        context, _weights = self.attention(self.norm1(x), return_weights=True)
        x = x + context
        return x + self.mlp(self.norm2(x))


class ByTheLayers(Block):
    """The MLP's layers called one by one, the residuals added with torch.add."""

    def forward(self, x):
        x = torch.add(x, self.attention(self.norm1(x)))
        hidden = self.mlp[1](self.mlp[0](self.norm2(x)))
        return torch.add(x, self.mlp[2](hidden))


BLOCK_RIGHT = {
    "two lines": Solution,
    "another name for the middle": OneLine,
    "asks for the weights, keeps the context": ThroughWeights,
    "the MLP by its layers": ByTheLayers,
    "the course's Block": Block,
}


def block(forward):
    """A learner's block whose forward is ``forward(self, x)``."""
    return type("Answer", (Block,), {"forward": forward})


class Detached(Block):
    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return (x + self.mlp(self.norm2(x))).detach()


class UnderNoGrad(Block):
    def forward(self, x):
        with torch.no_grad():
            x = x + self.attention(self.norm1(x))
            return x + self.mlp(self.norm2(x))


class AttentionDetached(Block):
    def forward(self, x):
        x = x + self.attention(self.norm1(x)).detach()
        return x + self.mlp(self.norm2(x))


class UnpacksTheContext(Block):
    """As Block.forward does, but without return_weights: the batch of two splits in two."""

    def forward(self, x):
        context, _ = self.attention(self.norm1(x))
        x = x + context
        return x + self.mlp(self.norm2(x))


BLOCK_WRONG = {
    "no attention residual": (block(lambda s, x: (lambda h: h + s.mlp(s.norm2(h)))(
        s.attention(s.norm1(x)))), "first residual connection is missing"),
    "no MLP residual": (block(lambda s, x: s.mlp(s.norm2(x + s.attention(s.norm1(x))))),
                        "second residual connection is missing"),
    "no residuals": (block(lambda s, x: s.mlp(s.norm2(s.attention(s.norm1(x))))),
                     "no residual connection at all"),
    "post-norm": (block(lambda s, x: (lambda h: s.norm2(h + s.mlp(h)))(
        s.norm1(x + s.attention(x)))), "post-norm"),
    "no norms": (block(lambda s, x: (lambda h: h + s.mlp(h))(x + s.attention(x))),
                 "LayerNorms are not used"),
    "norm1 twice": (block(lambda s, x: (lambda h: h + s.mlp(s.norm1(h)))(
        x + s.attention(s.norm1(x)))), "norm1 is used before the MLP too"),
    "norms swapped": (block(lambda s, x: (lambda h: h + s.mlp(s.norm1(h)))(
        x + s.attention(s.norm2(x)))), "swapped"),
    "side by side": (block(lambda s, x: x + s.attention(s.norm1(x)) + s.mlp(s.norm2(x))),
                     "side by side"),
    "added to the normalised copy": (block(lambda s, x: (lambda h: s.norm2(h) + s.mlp(
        s.norm2(h)))(s.norm1(x) + s.attention(s.norm1(x)))), "added to the normalised copy"),
    "MLP first": (block(lambda s, x: (lambda h: h + s.attention(s.norm1(h)))(
        x + s.mlp(s.norm2(x)))), "MLP runs before attention"),
    "attention read by the MLP, not added": (block(lambda s, x: x + s.mlp(s.norm2(
        s.attention(s.norm1(x))))), "attention's result is not added to x"),
    "MLP added to the x that came in": (block(lambda s, x: x + s.mlp(s.norm2(
        x + s.attention(s.norm1(x))))), "the second addition starts from"),
    "no MLP": (block(lambda s, x: x + s.attention(s.norm1(x))), "MLP step is missing"),
    "adds the pair": (block(lambda s, x: x + s.attention(s.norm1(x), return_weights=True)),
                      "returns a pair (context, weights)"),
    "unpacks the context": (UnpacksTheContext, "splits it along its first dimension, the "
                                               "batch"),
    "returns the weights too": (block(lambda s, x: Block.forward(s, x, return_weights=True)),
                                "returned a tuple"),
    "detached output": (Detached, "carries no gradient back to the block's weights"),
    "under torch.no_grad()": (UnderNoGrad, "carries no gradient back to the block's weights"),
    "attention detached": (AttentionDetached, "no gradient reaches self.norm1 and "
                                              "self.attention"),
    "not a module": (lambda *args: None, "not an nn.Module"),
    "own layers": (type("Answer", (nn.Module,), {
        "__init__": lambda s, d, h, c, causal=True: (nn.Module.__init__(s), setattr(
            s, "mlp", nn.Linear(d, d)))[0],
        "forward": lambda s, x: s.mlp(x)}), "weights do not load from Block's"),
}

test_block_right, test_block_wrong = table_tests(check_block_forward, BLOCK_RIGHT, BLOCK_WRONG)


@pytest.mark.parametrize("batch", [1, 3])
def test_unpacking_fails_on_other_batches_with_its_meaning(batch):
    """With a batch of other than two, the same unpacking raises: the message says why."""
    x = torch.randn(batch, 7, 12)
    outcome = run(UnpacksTheContext(12, 3, 7), "MyBlock.forward", {"x": x},
                  extra_errors=BLOCK_ERRORS)
    assert outcome.failed is not None and outcome.failed.status == INCORRECT
    assert "splits it along its first dimension, the batch" in outcome.failed.message
    assert "without return_weights" in outcome.failed.hint_text


TABLES = {
    check_previous_token_score: (SCORE_RIGHT, SCORE_WRONG),
    check_next_token_loss: (LOSS_RIGHT, LOSS_WRONG),
    check_block_forward: (BLOCK_RIGHT, BLOCK_WRONG),
}
