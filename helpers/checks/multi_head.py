"""Checks for notebook 05's exercises: split into heads, merge the heads, and count a
multi-head layer's parameters without building it."""

import torch

from helpers.attention import MultiHeadAttention
from helpers.checks.feedback import (
    Feedback,
    attempt,
    call,
    correct,
    hint_of,
    incorrect,
    seeded,
    tensor_problem,
)

# ---------------------------------------------------------------- exercise 1


def _features() -> torch.Tensor:
    return torch.randn(2, 6, 12, generator=torch.Generator().manual_seed(5))  # (B, T, d_out)


def check_split_heads(split_heads) -> Feedback:
    """Exercise: split_heads(x, num_heads), (B, T, d_out) -> (B, H, T, head_dim)."""
    name = "split_heads"
    features = _features()
    B, T, d_out = features.shape
    for num_heads in (3, 4):
        answer, failed = call(split_heads, name, features, num_heads)
        if failed and "shape" in failed.message and "invalid for input" in failed.message:
            return incorrect(f"{hint_of(failed)}. The new shape must hold exactly "
                             "B * T * d_out values, so head_dim is d_out // num_heads (take "
                             "d_out from x.shape).")
        if failed:
            return failed
        size = d_out // num_heads
        problem = tensor_problem(answer, name)
        if problem:
            return problem
        shape = tuple(answer.shape)
        if shape == (B, T, num_heads, size):
            return incorrect(f"with num_heads={num_heads} the shape is (B, T, H, head_dim) = "
                             f"{shape}: the heads must come before the tokens, "
                             "(B, H, T, head_dim). Swap them with transpose(1, 2).")
        if shape != (B, num_heads, T, size):
            return incorrect(f"with num_heads={num_heads} expected (B, H, T, head_dim) = "
                             f"({B}, {num_heads}, {T}, {size}), got {shape}: head_dim is "
                             "d_out // num_heads, and the heads come before the tokens.")
        answer = answer.detach()
        if torch.equal(answer, features.view(B, num_heads, T, size)):
            return incorrect("the shape is right, but viewing straight to (B, H, T, head_dim) "
                             "mixes tokens into heads: head 0 gets whole tokens, not a block of "
                             "every token's features. View as (B, T, H, head_dim) first, then "
                             "transpose(1, 2).")
        if torch.equal(answer, features.view(B, T, size, num_heads).permute(0, 3, 1, 2)):
            return incorrect("the shape is right, but each head gets every H-th feature "
                             "(features h, h + H, ...), not a block of head_dim neighbours: "
                             "view as (B, T, H, head_dim), with H before head_dim.")
        for h in range(num_heads):
            if not torch.equal(answer[:, h], features[..., h * size:(h + 1) * size]):
                return incorrect(f"the shape is right, but head {h} does not hold features "
                                 f"{h * size} to {(h + 1) * size - 1} of each token: view as "
                                 "(B, T, H, head_dim), then transpose(1, 2).")
    return correct("every head gets its own block of features, for every token.")


# ---------------------------------------------------------------- exercise 2


def check_merge_heads(merge_heads) -> Feedback:
    """Exercise: merge_heads(context), (B, H, T, head_dim) -> (B, T, H * head_dim)."""
    name = "merge_heads"
    head_outputs = torch.randn(2, 3, 6, 4, generator=torch.Generator().manual_seed(6))
    B, H, T, head_dim = head_outputs.shape
    answer, failed = call(merge_heads, name, head_outputs)
    if failed and "view size is not compatible" in failed.message:
        return incorrect("view refused the transposed tensor: after transpose its memory is not "
                         "in (B, T, H, head_dim) order. Call .contiguous() before .view (or use "
                         ".reshape).")
    if failed:
        return failed
    problem = tensor_problem(answer, name, (B, T, H * head_dim))
    if problem:
        return incorrect(f"{hint_of(problem)}, that is (B, T, H * head_dim)"
                         if "returned shape" in problem.message else hint_of(problem))
    answer = answer.detach()
    if torch.equal(answer, head_outputs.reshape(B, T, H * head_dim)):
        return incorrect("the shape is right, but the values are mixed up: without "
                         "transpose(1, 2) back to (B, T, H, head_dim), one token's row gets "
                         "several tokens of one head. Transpose first, then join the last two "
                         "dimensions.")
    if torch.equal(answer, head_outputs.permute(0, 2, 3, 1).reshape(B, T, H * head_dim)):
        return incorrect("the heads are interleaved feature by feature: the order "
                         "(B, T, head_dim, H) puts feature 0 of every head first. Keep "
                         "(B, T, H, head_dim), so that each head's vector stays in one block.")
    for h in range(H):
        if not torch.equal(answer[:, :, h * head_dim:(h + 1) * head_dim], head_outputs[:, h]):
            return incorrect(f"the shape is right, but features {h * head_dim} to "
                             f"{(h + 1) * head_dim - 1} of each token are not head {h}'s vector "
                             "for that token: transpose(1, 2), then join the last two "
                             "dimensions.")
    return correct("each token's features are its heads' vectors, side by side.")


# ---------------------------------------------------------------- exercise 3

SIZES = [(3, 2, 2, False), (3, 4, 2, True), (8, 12, 3, False), (8, 12, 4, True),
         (768, 768, 12, True)]


def _count(d_in: int, d_out: int, num_heads: int, qkv_bias: bool) -> int:
    with seeded(0):
        module = MultiHeadAttention(d_in, d_out, 4, 0.0, num_heads, qkv_bias=qkv_bias)
    return sum(parameter.numel() for parameter in module.parameters())


def _count_hint(counter, size, answer: int, expected: int) -> str:
    d_in, d_out, num_heads, qkv_bias = size
    one_head, failed = attempt(counter, "", d_in, d_out, 1, qkv_bias)
    if failed is None and one_head != answer:
        return ("the count should not depend on num_heads: the heads share the d_out "
                "features, they add no weights. ")
    if expected - answer == d_out:
        return "one bias of d_out is missing: out_proj has a bias even when qkv_bias=False. "
    if qkv_bias and expected - answer == 3 * d_out:
        return "with qkv_bias=True, W_query, W_key and W_value each have a bias of d_out. "
    if expected - answer == d_out * d_out + d_out:
        return "the output projection out_proj, an nn.Linear(d_out, d_out), is missing. "
    if answer - expected == 3 * d_out and not qkv_bias:
        return "with qkv_bias=False, W_query, W_key and W_value have no bias. "
    return ""


def check_parameter_count(attention_parameter_count) -> Feedback:
    """Exercise: attention_parameter_count(d_in, d_out, num_heads, qkv_bias) from sizes."""
    name = "attention_parameter_count"
    for size in SIZES:
        answer, failed = call(attention_parameter_count, name, *size)
        if failed:
            return failed
        if isinstance(answer, torch.Tensor) and answer.numel() == 1:
            answer = answer.item()
        if not isinstance(answer, (int, float)) or isinstance(answer, bool):
            return incorrect(f"{name} returned a {type(answer).__name__}, expected a number")
        expected = _count(*size)
        if answer == expected:
            continue
        d_in, d_out, num_heads, qkv_bias = size
        hint = _count_hint(attention_parameter_count, size, answer, expected)
        sizes = f"d_in={d_in}, d_out={d_out}, num_heads={num_heads}, qkv_bias={qkv_bias}"
        verdict = "too many" if answer > expected else "too few"
        return incorrect(f"{hint}{'For' if hint else 'for'} {sizes} you counted {answer:,}, "
                         f"which is {verdict}.")
    return correct("your formula matches the modules, from toy size to GPT-2 small.")
