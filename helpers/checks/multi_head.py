"""Checks for notebook 05's exercises: split into heads, merge the heads, and count a
multi-head layer's parameters without building it."""

import torch

from helpers.attention import MultiHeadAttention
from helpers.checks.feedback import (
    Feedback,
    as_number,
    correct,
    describe,
    exercise_check,
    incorrect,
    run,
    shape_text,
    tensor_problem,
    with_context,
)
from helpers.seeding import seeded

# ---------------------------------------------------------------- exercise 1

# (B, T, d_out, num_heads): unlike the notebook's (2, 6, 4, 2), several head counts.
SPLIT_SIZES = [(2, 5, 12, 3), (2, 5, 12, 4), (3, 7, 10, 5), (1, 1, 8, 2), (2, 4, 12, 6)]

SPLIT_HINT = ("first give each token's features a heads axis, (B, T, H, head_dim), then move "
              "the heads before the tokens.")


def _split_feedback(answer: torch.Tensor, features: torch.Tensor, num_heads: int):
    """Feedback for a (B, T, d_out) -> (B, H, T, head_dim) answer, None when right."""
    B, T, d_out = features.shape
    size = d_out // num_heads
    shape = tuple(answer.shape)
    if shape == (B, T, num_heads, size) and (T, num_heads) != (num_heads, T):
        return incorrect(f"the shape is (B, T, H, head_dim) = {shape_text(shape)}: the heads "
                         "must come before the tokens, (B, H, T, head_dim)",
                         "two dimensions still need to swap places.")
    if shape != (B, num_heads, T, size):
        return incorrect(f"expected (B, H, T, head_dim) = {shape_text((B, num_heads, T, size))}, "
                         f"got {shape_text(shape)}: each head gets head_dim features, d_out "
                         "shared equally among the heads, and the heads come before the tokens",
                         "take every size from x.shape and num_heads, never from the notebook.")
    answer = answer.detach()
    if torch.equal(answer, features.view(B, num_heads, T, size)) and T > 1:
        return incorrect("the shape is right, but viewing straight to (B, H, T, head_dim) mixes "
                         "tokens into heads: head 0 gets whole tokens, not a block of every "
                         "token's features", SPLIT_HINT)
    if torch.equal(answer, features.view(B, T, size, num_heads).permute(0, 3, 1, 2)) and size > 1:
        return incorrect("the shape is right, but each head gets every H-th feature (features "
                         "h, h + H, ...), not a block of head_dim neighbours", SPLIT_HINT)
    for h in range(num_heads):
        if not torch.equal(answer[:, h], features[..., h * size:(h + 1) * size]):
            return incorrect(f"the shape is right, but head {h} does not hold features "
                             f"{h * size} to {(h + 1) * size - 1} of each token", SPLIT_HINT)
    return None


@exercise_check(SPLIT_HINT + " The check tries several batch sizes, lengths and head counts.")
def check_split_heads(split_heads) -> Feedback:
    """Exercise: split_heads(x, num_heads), (B, T, d_out) -> (B, H, T, head_dim)."""
    name = "split_heads"
    generator = torch.Generator().manual_seed(5)
    for B, T, d_out, num_heads in SPLIT_SIZES:
        features = torch.randn(B, T, d_out, generator=generator)  # (B, T, d_out)
        on = f"for x of shape {shape_text(features.shape)}, num_heads = {num_heads}"
        outcome = run(split_heads, name, {"x": features, "num_heads": num_heads}, extra_errors=[
            ("invalid for input of size",
             "the new shape does not hold exactly B * T * d_out values: a size in it is not "
             "this input's", "take every size from x.shape and num_heads.")])
        if outcome.failed:
            return with_context(outcome.failed, on)
        problem = tensor_problem(outcome.answer, name, features, shape=False)
        if problem:
            return with_context(problem, on)
        wrong = _split_feedback(outcome.answer, features, num_heads)
        if wrong:
            return with_context(wrong, on)
    return correct("every head gets its own block of features, for every token, whatever the "
                   "sizes.")


# ---------------------------------------------------------------- exercise 2

MERGE_SIZES = [(2, 3, 6, 4), (3, 5, 7, 2), (1, 2, 1, 3), (2, 4, 3, 5)]  # (B, H, T, head_dim)

MERGE_HINT = ("move the tokens back before the heads, (B, T, H, head_dim), then join the last "
              "two dimensions.")


def _merge_feedback(answer: torch.Tensor, heads: torch.Tensor):
    B, H, T, head_dim = heads.shape
    if tuple(answer.shape) != (B, T, H * head_dim):
        return incorrect(f"returned shape {shape_text(answer.shape)}, expected (B, T, "
                         f"H * head_dim) = {shape_text((B, T, H * head_dim))}",
                         "take every size from context.shape.")
    answer = answer.detach()
    if torch.equal(answer, heads.reshape(B, T, H * head_dim)) and T > 1 and H > 1:
        return incorrect("the shape is right, but the values are mixed up: without moving the "
                         "tokens back before the heads, one token's row gets several tokens "
                         "of one head", MERGE_HINT)
    if torch.equal(answer, heads.permute(0, 2, 3, 1).reshape(B, T, H * head_dim)) and (
            head_dim > 1 and H > 1):
        return incorrect("the heads are interleaved feature by feature: the order "
                         "(B, T, head_dim, H) puts feature 0 of every head first", MERGE_HINT)
    for h in range(H):
        if not torch.equal(answer[:, :, h * head_dim:(h + 1) * head_dim], heads[:, h]):
            return incorrect(f"the shape is right, but features {h * head_dim} to "
                             f"{(h + 1) * head_dim - 1} of each token are not head {h}'s "
                             "vector for that token", MERGE_HINT)
    return None


@exercise_check(MERGE_HINT + " Watch what view says after a transpose.")
def check_merge_heads(merge_heads) -> Feedback:
    """Exercise: merge_heads(context), (B, H, T, head_dim) -> (B, T, H * head_dim)."""
    name = "merge_heads"
    generator = torch.Generator().manual_seed(6)
    for size in MERGE_SIZES:
        heads = torch.randn(*size, generator=generator)
        on = f"for context of shape {shape_text(size)}"
        outcome = run(merge_heads, name, {"context": heads}, extra_errors=[
            ("invalid for input of size",
             "the new shape does not hold exactly B * T * H * head_dim values: a size in it is "
             "not this input's", "take every size from context.shape.")])
        if outcome.failed:
            return with_context(outcome.failed, on)
        problem = tensor_problem(outcome.answer, name, heads, shape=False)
        if problem:
            return with_context(problem, on)
        wrong = _merge_feedback(outcome.answer, heads)
        if wrong:
            return with_context(wrong, on)
    return correct("each token's features are its heads' vectors, side by side.")


# ---------------------------------------------------------------- exercise 3

SIZES = [(3, 2, 2, False), (5, 4, 2, True), (8, 12, 3, False), (8, 12, 4, True),
         (7, 10, 5, False), (768, 768, 12, True)]


def _count(d_in: int, d_out: int, num_heads: int, qkv_bias: bool) -> int:
    with seeded(0):
        module = MultiHeadAttention(d_in, d_out, 4, 0.0, num_heads, qkv_bias=qkv_bias)
    return sum(parameter.numel() for parameter in module.parameters())


def _count_feedback(counter, size, answer: float, expected: int):
    d_in, d_out, num_heads, qkv_bias = size
    sizes = f"d_in={d_in}, d_out={d_out}, num_heads={num_heads}, qkv_bias={qkv_bias}"
    verdict = "too many" if answer > expected else "too few"
    shown = f"{answer:,.0f}" if float(answer).is_integer() else f"{answer:,}"
    counted = f"for {sizes} you counted {shown}, which is {verdict}"
    one_head = as_number(run(counter, "", {"d_in": d_in, "d_out": d_out, "num_heads": 1,
                                           "qkv_bias": qkv_bias}).answer)
    layers = "list the four nn.Linear layers with their in and out sizes and their biases."
    if one_head is not None and one_head != answer:
        return incorrect(f"{counted}: the count should not depend on num_heads, the heads "
                         "share the d_out features and add no weights", layers)
    if expected - answer == d_out:
        which = ("the output projection out_proj's bias" if not qkv_bias else
                 "one bias of d_out: out_proj's, or one of the query, key and value biases")
        return incorrect(f"{counted}: {which} is missing", "out_proj is built with "
                                                           "nn.Linear's default: a bias.")
    if qkv_bias and expected - answer == 3 * d_out:
        return incorrect(f"{counted}: with qkv_bias=True, the query, key and value "
                         "projections have biases too", layers)
    if expected - answer == d_out * d_out + d_out:
        return incorrect(f"{counted}: the output projection out_proj is missing", layers)
    if answer - expected == 3 * d_out and not qkv_bias:
        return incorrect(f"{counted}: with qkv_bias=False, the query, key and value "
                         "projections have no bias", layers)
    return incorrect(counted, layers)


@exercise_check("MultiHeadAttention holds four nn.Linear layers; an nn.Linear(a, b) has "
                "a * b weights and, with a bias, b more. num_heads only splits d_out.")
def check_parameter_count(attention_parameter_count) -> Feedback:
    """Exercise: attention_parameter_count(d_in, d_out, num_heads, qkv_bias) from sizes."""
    name = "attention_parameter_count"
    for size in SIZES:
        d_in, d_out, num_heads, qkv_bias = size
        outcome = run(attention_parameter_count, name,
                      {"d_in": d_in, "d_out": d_out, "num_heads": num_heads, "qkv_bias": qkv_bias})
        if outcome.failed:
            return outcome.failed
        if isinstance(outcome.answer, torch.Tensor) and outcome.answer.device.type != "cpu":
            return incorrect(f"your answer is on device '{outcome.answer.device}'; a count is "
                             "a plain number", "return the count itself, an int.")
        answer = as_number(outcome.answer)
        if answer is None:
            return incorrect(f"{name} returned {describe(outcome.answer)}, expected a number",
                             "return the count itself, an int.")
        if not float(answer).is_integer():
            return incorrect(f"{name} returned the float {answer}; a count of parameters is a "
                             "whole number", "every term of the count is a product of sizes.")
        expected = _count(*size)
        if answer != expected:
            return _count_feedback(attention_parameter_count, size, answer, expected)
    return correct("your formula matches the modules, from toy size to GPT-2 small.")
