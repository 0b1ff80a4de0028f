"""Checks for notebook 08's exercises: a head's previous-token score read from its
attention weights, the next-token loss with its shift, and a GPT block's forward pass with
its residual connections.

The block check takes the learner's class, not an instance: it builds its own blocks (with
its own seed, the global generator's state given back afterwards) and loads the weights of
the course's ``Block`` into the learner's, so nothing the learner built is touched.
"""

import torch
import torch.nn.functional as F

from helpers.attention import causal_mask
from helpers.checks.feedback import (
    NOT_ATTEMPTED,
    Feedback,
    as_number,
    close,
    construct,
    correct,
    describe,
    exercise_check,
    incorrect,
    not_attempted,
    run,
    shape_text,
    tensor_problem,
    with_context,
)
from helpers.gpt.model import Block
from helpers.seeding import seeded


def _judge(answer, expected, mistakes, name: str, fallback: Feedback, wrong_shape=None):
    """None when ``answer`` is ``expected``; else the Feedback of the first known mistake
    (wrong answer, Feedback) it matches, of whatever shape, then a shape message (``wrong_shape``
    if given), then ``fallback``."""
    problem = tensor_problem(answer, name, expected, shape=False)
    if problem:
        return problem
    answer = answer.detach()
    if close(answer, expected):
        return None
    for wrong, feedback in mistakes:
        if close(answer, wrong):
            return feedback
    shape_problem = tensor_problem(answer, name, expected)
    if shape_problem and wrong_shape is not None:
        return wrong_shape
    return shape_problem or fallback


# ---------------------------------------------------------------- exercise 1


def _weights_cases():
    """(weights (B, H, T, T), what): causal and unmasked heads, B never equal to H."""
    generator = torch.Generator().manual_seed(7)
    cases = []
    for B, H, T, causal in ((3, 2, 5, True), (2, 4, 7, False), (1, 3, 4, True)):
        scores = torch.randn(B, H, T, T, generator=generator) * 2  # (B, H, T, T)
        if causal:
            scores = scores.masked_fill(~causal_mask(T), float("-inf"))
        kind = "causal" if causal else "unmasked"
        cases.append((torch.softmax(scores, dim=-1), f"{kind} weights of shape (B, H, T, T) = "
                                                     f"{shape_text(scores.shape)}"))
    return cases


DIAGONAL_HINT = ("weights[b, h, i, i - 1] is the weight query i gives the token just before it; "
                 "those entries form one diagonal of each (T, T) matrix, counted from the "
                 "last two dimensions.")
MEAN_HINT = ("average over the queries that have a token before them, then over the "
             "sequences; keep the heads.")


def _score_mistakes(weights):
    below = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1)
    above = weights.diagonal(offset=1, dim1=-2, dim2=-1)  # (B, H, T - 1)
    own = weights.diagonal(dim1=-2, dim2=-1)  # (B, H, T)
    T = weights.shape[-1]
    earlier = weights.tril(diagonal=-1).sum(dim=-1)[..., 1:]  # (B, H, T - 1)
    return [
        (above.mean(dim=(0, -1)), incorrect(
            "this is the weight on the token just AFTER each query (the next token, which a "
            "causal head never sees), not the one just before", DIAGONAL_HINT)),
        (own.mean(dim=(0, -1)), incorrect(
            "this is each query's weight on itself (the main diagonal), not on the token "
            "just before it", DIAGONAL_HINT)),
        (below.sum(dim=-1).mean(dim=0) / T, incorrect(
            "the sum is divided by T, as if query 0 counted: it has no token before it, so "
            "only T - 1 queries are averaged", MEAN_HINT)),
        (below.sum(dim=(0, -1)), incorrect("this is a sum; the score is a mean (1 for a head "
                                           "that always looks one back)", MEAN_HINT)),
        (below.sum(dim=-1).mean(dim=0), incorrect(
            "the weights are summed over the queries, not averaged: the score is a mean "
            "(1 for a head that always looks one back)", MEAN_HINT)),
        (earlier.mean(dim=(0, -1)), incorrect(
            "this is the total weight on ALL earlier tokens, not on the one just before",
            DIAGONAL_HINT)),
        (below.amax(dim=-1).mean(dim=0), incorrect(
            "this takes the largest weight on the token before, over the queries, not the "
            "mean", MEAN_HINT)),
        (below.mean(dim=-1), incorrect(
            f"this is one score per sequence and head, shape (B, H) = "
            f"{shape_text(below.shape[:2])}: average over the sequences too", MEAN_HINT)),
        (below.mean(dim=(1, -1)), incorrect(
            "this averages over the heads and keeps the sequences: the score is one number "
            "per HEAD (dimension 1), averaged over the sequences (dimension 0)", MEAN_HINT)),
        (below.mean(), incorrect("this is one number for all heads together: keep one score "
                                 "per head", MEAN_HINT)),
        (weights.diagonal(offset=-1).mean(dim=(0, -1)), incorrect(
            "the diagonal was taken over dimensions 0 and 1 (B and H), diagonal's default: "
            "the (T, T) matrices are the last two dimensions", DIAGONAL_HINT)),
    ]


@exercise_check("weights[b, h, i, i - 1] is what query i of head h gives the token just before "
                "it. Collect those entries for i = 1 .. T - 1 (one diagonal of each (T, T) "
                "matrix), then average over the queries and the sequences, keeping the heads.")
def check_previous_token_score(my_previous_token_score) -> Feedback:
    """Exercise: my_previous_token_score(weights) (B, H, T, T) -> (H,)."""
    name = "my_previous_token_score"
    for weights, on in _weights_cases():
        outcome = run(my_previous_token_score, name, {"weights": weights})
        if outcome.failed:
            return with_context(outcome.failed, f"on {on}")
        expected = weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))  # (H,)
        B, H, T, _ = weights.shape
        answer_shape = getattr(outcome.answer, "shape", None)
        wrong = _judge(outcome.answer, expected, _score_mistakes(weights), name, incorrect(
            "not each head's mean weight on the token just before each query",
            "print the weights of one short sequence and one head, and the entries you "
            "average: " + DIAGONAL_HINT), wrong_shape=incorrect(
            f"{name} returned shape {shape_text(answer_shape or ())}; the score is one number "
            f"per head, shape (H,) = ({H},). The entries before each query have shape "
            f"(B, H, T - 1) = {shape_text((B, H, T - 1))}: average over the sequences "
            "(dimension 0) and the queries (the last), not over the heads", MEAN_HINT))
        if wrong:
            return with_context(wrong, f"on {on}")
    return correct("one score per head, the mean weight on the token just before each query, "
                   "for causal and unmasked heads.")


# ---------------------------------------------------------------- exercise 2


def _loss_cases():
    """(logits (B, T, V), ids (B, T), what): T - 1 never equal to V, one sequence alone."""
    generator = torch.Generator().manual_seed(70)
    cases = []
    for B, T, V in ((3, 6, 4), (2, 5, 9), (1, 4, 7)):
        logits = torch.randn(B, T, V, generator=generator) * 2  # (B, T, V)
        ids = torch.randint(0, V, (B, T), generator=generator)  # (B, T)
        cases.append((logits.requires_grad_(), ids,
                      f"logits {shape_text(logits.shape)}, ids {shape_text(ids.shape)}"))
    return cases


SHIFT_HINT = ("the logits at position t score the token at t + 1: the last position has no "
              "next token, and the first token is no position's target.")
LOSS_ERRORS = [
    ("Expected target size",
     "F.cross_entropy reads 3-D logits as (B, V, T): the classes in dimension 1, not last",
     "flatten the positions of the logits and of the targets, or move the classes to "
     "dimension 1."),
    ("to match target batch_size",
     "the logits and the targets have different numbers of positions",
     SHIFT_HINT),
    ("view size is not compatible",
     "view cannot flatten a slice that skips a position of every sequence (it is not one "
     "block of memory)", "reshape and flatten copy when they have to; view never does."),
]


def _loss_mistakes(logits, ids):
    V = logits.shape[-1]

    def flat(predictions, targets, **options):
        return F.cross_entropy(predictions.reshape(-1, V), targets.reshape(-1), **options)

    right = flat(logits[:, :-1], ids[:, 1:])
    return [
        (flat(logits, ids), incorrect(
            "no shift: each position is scored on its own token, which it has already read",
            SHIFT_HINT)),
        (flat(logits[:, :-1], ids[:, :-1]), incorrect(
            "the last position is dropped but the targets are not shifted: each position is "
            "scored on its own token", SHIFT_HINT)),
        (flat(logits[:, 1:], ids[:, :-1]), incorrect(
            "shifted the wrong way: each position is asked for the token BEFORE it",
            SHIFT_HINT)),
        (flat(logits[:, :-1].transpose(0, 1), ids[:, 1:]), incorrect(
            "the logits and the targets are flattened in different orders (one by position, "
            "one by sequence), so they no longer line up", "flatten both the same way.")),
        (flat(logits[:, :-1], ids[:, 1:], reduction="sum"), incorrect(
            "this is the sum over the positions; the loss is the mean",
            "cross_entropy's default reduction is the one wanted.")),
        (flat(logits[:, :-1].softmax(dim=-1), ids[:, 1:]), incorrect(
            "softmax before cross_entropy: cross_entropy takes the raw logits and applies "
            "log_softmax itself", "give cross_entropy the logits as the model returns them.")),
        (F.nll_loss(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1)), incorrect(
            "nll_loss on raw logits: nll_loss expects log-probabilities",
            "one function does log_softmax and the negative log-likelihood together.")),
        (-right, incorrect("the sign is flipped: the loss is MINUS the log of the probability "
                           "of the right token, a positive number",
                           "a probability below 1 has a negative log.")),
        (F.nll_loss(logits[:, :-1].log_softmax(dim=1).reshape(-1, V), ids[:, 1:].reshape(-1)),
         incorrect("log_softmax over the positions (dimension 1), not over the vocabulary",
                   "the probabilities of one position's next token are the last dimension.")),
        (F.cross_entropy(logits[:, -2], ids[:, -1]), incorrect(
            "only the last pair is scored: training scores every position at once",
            SHIFT_HINT)),
    ]


@exercise_check("shift first: drop the last position of the logits and the first token of the "
                "ids, so that position t is scored on token t + 1. Then cross_entropy wants "
                "(N, V) logits and (N,) targets: flatten the batch and the positions together.")
def check_next_token_loss(next_token_loss) -> Feedback:
    """Exercise: next_token_loss(logits, ids) -> the mean next-token cross-entropy."""
    name = "next_token_loss"
    for logits, ids, on in _loss_cases():
        context = f"on {on}"
        outcome = run(next_token_loss, name, {"logits": logits, "ids": ids},
                      extra_errors=LOSS_ERRORS)
        if outcome.failed:
            return with_context(outcome.failed, context)
        answer = outcome.answer
        if not isinstance(answer, torch.Tensor) and as_number(answer) is not None:
            return with_context(incorrect(
                f"{name} returned {describe(answer)}: a Python number has left the graph, so "
                "backward cannot run through it", "return the loss tensor itself."), context)
        with torch.no_grad():
            expected = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                       ids[:, 1:].reshape(-1))
            mistakes = _loss_mistakes(logits, ids)
        problem = tensor_problem(answer, name, expected, shape=False)
        if problem:
            return with_context(problem, context)
        if answer.numel() != 1:
            return with_context(incorrect(
                f"{name} returned shape {shape_text(answer.shape)}; the loss is one number, "
                "the mean over every predicted position",
                "cross_entropy's default reduction gives one number."), context)
        value = answer.detach().reshape(())
        wrong = _judge(value, expected, mistakes, name, incorrect(
            "not the mean cross-entropy of each position's logits against the next token",
            SHIFT_HINT))
        if wrong:
            return with_context(wrong, context)
        if not answer.requires_grad:
            return with_context(incorrect(
                "the value is right, but it carries no gradient back to the logits (detached, "
                "or computed under no_grad): training could not use it",
                "compute the loss from the logits with torch operations, as they are."),
                context)
    return correct("each position scored on the next token, averaged over every position "
                   "of every sequence, with a gradient for training.")


# ---------------------------------------------------------------- exercise 3

# (d_model, num_heads, context_length, causal, x's shape): unlike the notebook's (32, 2, 24).
BLOCK_CONFIGS = [(12, 3, 7, True, (2, 7, 12)), (8, 2, 6, True, (3, 4, 8)),
                 (8, 4, 5, False, (1, 5, 8))]
ORDER_HINT = ("two steps, in order: attention reads a normalised copy of x and its result is "
              "added to x; then the MLP reads a normalised copy of that sum, with the other "
              "norm, and its result is added too.")


def _blocks(cls, name: str, d_model: int, num_heads: int, context_length: int, causal: bool):
    """(reference, yours) with the same weights, or (None, Feedback). The reference's weights
    are moved off their initial values, so that the two LayerNorms differ."""
    with seeded(77):
        reference = Block(d_model, num_heads, context_length, causal)
        with torch.no_grad():
            for parameter in reference.parameters():
                parameter.add_(0.3 * torch.randn_like(parameter))
        yours, failed = construct(cls, name, d_model, num_heads, context_length, causal)
    if failed:
        return None, failed
    state = getattr(yours, "state_dict", None)
    if not callable(state):
        return None, incorrect(f"{name} is not an nn.Module", "subclass Block, as the stub "
                                                              "does, and write forward only.")
    try:
        yours.load_state_dict(reference.state_dict())
    except Exception as error:
        return None, incorrect(f"{name}'s weights do not load from Block's "
                               f"({type(error).__name__}: {str(error).splitlines()[0]})",
                               "change only forward: the layers come from Block's __init__.")
    return (reference.eval(), yours.eval()), None


UNPACKED = ("without return_weights, self.attention returns the context (B, T, d_model) "
            "alone, and unpacking a tensor into two names (as in `context, weights = ...`) "
            "splits it along its first dimension, the batch")
UNPACKED_HINT = ("call self.attention without return_weights and use the tensor it returns, "
                 "as it is: it is the context of every sequence.")


def _block_mistakes(block, x):
    """What the usual slips in a block's forward give for x (B, T, d_model)."""
    norm1, norm2, attention, mlp = block.norm1, block.norm2, block.attention, block.mlp

    def no_attention_residual():
        h = attention(norm1(x))
        return h + mlp(norm2(h))

    def no_mlp_residual():
        return mlp(norm2(x + attention(norm1(x))))

    def post_norm():
        h = norm1(x + attention(x))
        return norm2(h + mlp(h))

    def no_norms():
        h = x + attention(x)
        return h + mlp(h)

    def one_norm():
        h = x + attention(norm1(x))
        return h + mlp(norm1(h))

    def swapped_norms():
        h = x + attention(norm2(x))
        return h + mlp(norm1(h))

    def normalised_residual():
        h = norm1(x)
        h = h + attention(h)
        h2 = norm2(h)
        return h2 + mlp(h2)

    def mlp_first():
        h = x + mlp(norm2(x))
        return h + attention(norm1(h))

    slips = [
        (no_attention_residual, "attention's result replaces x instead of being added to it: "
                                "the first residual connection is missing"),
        (no_mlp_residual, "the MLP's result replaces x instead of being added to it: the "
                          "second residual connection is missing"),
        (lambda: mlp(norm2(attention(norm1(x)))), "no residual connection at all: each "
                                                  "sub-layer's result replaces x"),
        (post_norm, "the norms come after the additions (post-norm, as in the 2017 "
                    "Transformer); this GPT's block normalises a copy of x BEFORE each "
                    "sub-layer and adds the result to x as it was"),
        (no_norms, "the LayerNorms are not used: attention and the MLP read x itself"),
        (one_norm, "norm1 is used before the MLP too: each sub-layer has a norm of its own"),
        (swapped_norms, "norm1 and norm2 are swapped: norm1 belongs to attention"),
        (lambda: x + attention(norm1(x)) + mlp(norm2(x)), (
            "the MLP reads x from before attention (the two sub-layers side by side): in this "
            "block the MLP comes after attention and reads its result")),
        (normalised_residual, "the results are added to the normalised copy, not to x: the "
                              "residual path must carry x unchanged"),
        (mlp_first, "the MLP runs before attention"),
        (lambda: x + mlp(norm2(attention(norm1(x)))), (
            "attention's result is not added to x: the MLP reads it, but x goes on without "
            "it (the first residual connection is missing)")),
        (lambda: x + mlp(norm2(x + attention(norm1(x)))), (
            "the MLP's result is added to the x that came in, so attention's result is "
            "dropped from the output: the second addition starts from x + attention's")),
        (lambda: x + attention(norm1(x)), "the MLP step is missing"),
    ]
    with torch.no_grad():
        found = [(function(), incorrect(words, ORDER_HINT)) for function, words in slips]
        if x.shape[0] == 2:  # only a batch of two unpacks into two names without an error
            context, _ = attention(norm1(x))  # the first sequence's context, (T, d_model)
            h = x + context  # broadcast: every sequence gets it
            found.append((h + mlp(norm2(h)), incorrect(
                UNPACKED + ": the first name got the first sequence's context, and it was "
                "added to every sequence", UNPACKED_HINT)))
        return found


BLOCK_ERRORS = [
    ("values to unpack", UNPACKED + ": that works only for a batch of exactly two "
                                 "sequences", UNPACKED_HINT),
    ("'Tensor' and 'tuple'",
     "self.attention(..., return_weights=True) returns a pair (context, weights), and a pair "
     "cannot be added to a tensor",
     "call the attention module without return_weights: it then returns the context alone."),
    ("'tuple' and 'Tensor'",
     "self.attention(..., return_weights=True) returns a pair (context, weights), and a pair "
     "cannot be added to a tensor",
     "call the attention module without return_weights: it then returns the context alone."),
]


GRADIENT_HINT = ("forward is what training differentiates: torch.no_grad() and .detach() "
                 "belong to code that only evaluates, never inside a module's forward.")


def _modules_without_gradient(module, output) -> list:
    """The sub-modules (as self.<name>) none of whose weights get a gradient from output."""
    named = [(name, parameter) for name, parameter in module.named_parameters()
             if parameter.requires_grad]
    gradients = torch.autograd.grad(output.sum(), [parameter for _, parameter in named],
                                    allow_unused=True)
    reached = {name.split(".")[0] for (name, _), gradient in zip(named, gradients, strict=True)
               if gradient is not None}
    return [f"self.{name}" for name in dict.fromkeys(name.split(".")[0] for name, _ in named)
            if name not in reached]


def _gradient_feedback(yours, answer):
    """Feedback when a right output carries no gradient to some of the block's weights."""
    if not answer.requires_grad:
        return incorrect(
            "the output is right, but it carries no gradient back to the block's weights: "
            "it was detached, or computed under torch.no_grad(). A GPT built from this block "
            "could not learn, since training follows the gradient of the loss back through "
            "every block", GRADIENT_HINT)
    try:
        missing = _modules_without_gradient(yours, answer)
    except RuntimeError as error:
        return incorrect(f"the output is right, but the backward pass through it fails "
                         f"({str(error).splitlines()[0]})", "an in-place change of a tensor "
                                                            "autograd still needs breaks the "
                                                            "backward pass.")
    if missing:
        return incorrect(
            f"the output is right, but no gradient reaches {' and '.join(missing)}: part of "
            "the forward was detached, or run under torch.no_grad(), so training would never "
            "change those weights", GRADIENT_HINT)
    return None


@exercise_check(ORDER_HINT + " The layers are already there: self.norm1, self.attention, "
                             "self.norm2, self.mlp.")
def check_block_forward(MyBlock) -> Feedback:
    """Exercise: MyBlock(Block) with forward(x) (B, T, d_model) -> (B, T, d_model)."""
    name = "MyBlock"
    for d_model, num_heads, context_length, causal, shape in BLOCK_CONFIGS:
        sizes = (f"built with d_model={d_model}, num_heads={num_heads}, "
                 f"context_length={context_length}, causal={causal}")
        modules, failed = _blocks(MyBlock, name, d_model, num_heads, context_length, causal)
        if failed:
            if failed.status == NOT_ATTEMPTED:
                return not_attempted(name)
            return with_context(failed, sizes)
        reference, yours = modules
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(d_model + shape[0]))
        on = f"{sizes}; x of shape {shape_text(x.shape)}"
        outcome = run(yours, f"{name}.forward", {"x": x}, extra_errors=BLOCK_ERRORS)
        if outcome.failed:
            if outcome.failed.status == NOT_ATTEMPTED:
                return not_attempted(f"{name}.forward")
            return with_context(outcome.failed, on)
        with torch.no_grad():
            expected = reference(x)  # (B, T, d_model)
        wrong = _judge(outcome.answer, expected, _block_mistakes(reference, x),
                       f"{name}(x)", incorrect("the output differs from the block's",
                                               ORDER_HINT))
        wrong = wrong or _gradient_feedback(yours, outcome.answer)
        if wrong:
            return with_context(wrong, on)
    return correct("attention and then the MLP, each on a normalised copy of x, each added "
                   "back to x: the block of this notebook's GPT.")
