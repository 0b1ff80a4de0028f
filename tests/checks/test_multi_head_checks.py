"""Notebook 05's exercise checks: a table of right and wrong answers per check."""

import numpy as np
import torch

from helpers.attention import MultiHeadAttention
from helpers.checks.multi_head import (
    check_merge_heads,
    check_parameter_count,
    check_split_heads,
)
from tests.checks.support import table_tests

NOTEBOOK_B, NOTEBOOK_T, NOTEBOOK_HEAD_DIM = 2, 6, 2

# ---------------------------------------------------------------- split


def split_right(x, num_heads):
    B, T, d_out = x.shape
    return x.view(B, T, num_heads, d_out // num_heads).transpose(1, 2)


def split_loop(x, num_heads):
    head_dim = x.shape[-1] // num_heads
    heads = [x[..., h * head_dim:(h + 1) * head_dim] for h in range(num_heads)]
    return torch.stack(heads, dim=1)


def split_numpy(x, num_heads):
    B, T, d_out = x.shape
    return torch.from_numpy(x.numpy().reshape(B, T, num_heads, -1).transpose(0, 2, 1, 3).copy())


def split_float_division(x, num_heads):
    B, T, d_out = x.shape
    return x.view(B, T, num_heads, d_out / num_heads).transpose(1, 2)


def split_in_place(x, num_heads):
    x.mul_(1.0).add_(1.0)
    return split_right(x - 1.0, num_heads)


SPLIT_RIGHT = {
    "view and transpose": split_right,
    "reshape and permute": lambda x, h: x.reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3),
    "loop over heads": split_loop,
    "chunks stacked": lambda x, h: torch.stack(x.chunk(h, dim=-1), dim=1),
    "NumPy": split_numpy,
    "unflatten": lambda x, h: x.unflatten(-1, (h, -1)).transpose(1, 2),
}

SPLIT_WRONG = {
    "straight to (B, H, T, head_dim)": (
        lambda x, h: x.view(x.shape[0], h, x.shape[1], x.shape[2] // h), "mixes tokens into heads"),
    "head_dim and H swapped": (
        lambda x, h: x.view(x.shape[0], x.shape[1], -1, h).transpose(1, 2), "expected (B, H, T"),
    "strided heads": (lambda x, h: x.view(*x.shape[:2], x.shape[2] // h, h).permute(0, 3, 1, 2),
                      "every H-th feature"),
    "the notebook's head_dim": (lambda x, h: x.view(x.shape[0], x.shape[1], h, NOTEBOOK_HEAD_DIM)
                                .transpose(1, 2), "a size in it is not this input's"),
    "the notebook's B and T": (lambda x, h: x.view(NOTEBOOK_B, NOTEBOOK_T, h, -1).transpose(1, 2),
                               "a size in it is not this input's"),
    "d_out / num_heads": (split_float_division, "whole numbers"),
    "no transpose": (lambda x, h: x.view(x.shape[0], x.shape[1], h, x.shape[2] // h),
                     "heads must come before the tokens"),
    "heads reversed": (lambda x, h: split_right(x, h).flip(1), "head 0 does not hold features"),
    "in place": (split_in_place, "changed its argument `x` in place"),
    "no return": (lambda x, h: None, "`return`"),
    "a tuple of heads": (lambda x, h: x.chunk(h, dim=-1), "returned a tuple"),
    "another device": (lambda x, h: split_right(x, h).to("meta"), "on device 'meta'"),
}

test_split_right, test_split_wrong = table_tests(
    check_split_heads, SPLIT_RIGHT, SPLIT_WRONG, giveaways=["transpose(1, 2)", "// num_heads"])

# ---------------------------------------------------------------- merge


def merge_right(context):
    B, H, T, head_dim = context.shape
    return context.transpose(1, 2).contiguous().view(B, T, H * head_dim)


def merge_numpy(context):
    B, H, T, head_dim = context.shape
    return torch.from_numpy(context.numpy().transpose(0, 2, 1, 3).reshape(B, T, H * head_dim))


MERGE_RIGHT = {
    "contiguous view": merge_right,
    "reshape": lambda c: c.transpose(1, 2).reshape(c.shape[0], c.shape[2], -1),
    "loop, cat": lambda c: torch.cat([c[:, h] for h in range(c.shape[1])], dim=-1),
    "flatten": lambda c: c.permute(0, 2, 1, 3).flatten(2),
    "NumPy": merge_numpy,
}

MERGE_WRONG = {
    "view without contiguous": (lambda c: c.transpose(1, 2).view(c.shape[0], c.shape[2], -1),
                                "memory laid out"),
    "no transpose back": (lambda c: c.reshape(c.shape[0], c.shape[2], -1), "values are mixed up"),
    "interleaved": (lambda c: c.permute(0, 2, 3, 1).reshape(c.shape[0], c.shape[2], -1),
                    "interleaved"),
    "not joined": (lambda c: c.transpose(1, 2), "returned shape (2, 6, 3, 4)"),
    "heads summed": (lambda c: c.sum(dim=1), "returned shape (2, 6, 4)"),
    "heads reversed": (lambda c: merge_right(c.flip(1)), "are not head 0's vector"),
    "the notebook's sizes": (lambda c: c.transpose(1, 2).reshape(NOTEBOOK_B, NOTEBOOK_T, -1),
                             "a size in it is not this input's"),
    "tokens last": (lambda c: merge_right(c).transpose(1, 2), "returned shape (2, 12, 6)"),
    "no return": (lambda c: None, "`return`"),
    "another device": (lambda c: merge_right(c).to("meta"), "on device 'meta'"),
}

test_merge_right, test_merge_wrong = table_tests(
    check_merge_heads, MERGE_RIGHT, MERGE_WRONG, giveaways=[".contiguous()"])

# ---------------------------------------------------------------- count


def count_right(d_in, d_out, num_heads, qkv_bias):
    return 3 * (d_in * d_out + (d_out if qkv_bias else 0)) + d_out * d_out + d_out


def count_by_building(d_in, d_out, num_heads, qkv_bias):
    module = MultiHeadAttention(d_in, d_out, 1, 0.0, num_heads, qkv_bias=qkv_bias)
    return sum(parameter.numel() for parameter in module.parameters())


COUNT_RIGHT = {
    "formula": count_right,
    "a tensor holding it": lambda *size: torch.tensor(count_right(*size)),
    "a NumPy integer": lambda *size: np.int64(count_right(*size)),
    "a float": lambda *size: float(count_right(*size)),
    "a NumPy 0-d array": lambda *size: np.array(count_right(*size)),
    "by building the module": count_by_building,
}

COUNT_WRONG = {
    "out_proj bias missing": (lambda i, o, h, b: count_right(i, o, h, b) - o,
                              "out_proj's bias is missing"),
    "qkv bias ignored": (lambda i, o, h, b: count_right(i, o, h, False), "biases too"),
    "qkv bias always": (lambda i, o, h, b: count_right(i, o, h, True), "have no bias"),
    "out_proj missing": (lambda i, o, h, b: count_right(i, o, h, b) - o * o - o,
                         "out_proj is missing"),
    "depends on heads": (lambda i, o, h, b: count_right(i, o, h, b) + h,
                         "should not depend on num_heads"),
    "per-head weights": (lambda i, o, h, b: count_right(i, o * h, 1, b), "should not depend"),
    "far off": (lambda i, o, h, b: 1, "too few"),
    "too many": (lambda i, o, h, b: count_right(i, o, h, b) * 2, "too many"),
    "a string": (lambda i, o, h, b: str(count_right(i, o, h, b)), "returned a str"),
    "a bool": (lambda i, o, h, b: True, "returned a bool"),
    "no return": (lambda i, o, h, b: None, "returned None"),
    "a NumPy vector": (lambda i, o, h, b: np.array([count_right(i, o, h, b)] * 2),
                       "returned a NumPy array"),
    "half a parameter": (lambda i, o, h, b: count_right(i, o, h, b) + 0.5, "a whole number"),
}

test_count_right, test_count_wrong = table_tests(check_parameter_count, COUNT_RIGHT, COUNT_WRONG)

TABLES = {
    check_split_heads: (SPLIT_RIGHT, SPLIT_WRONG),
    check_merge_heads: (MERGE_RIGHT, MERGE_WRONG),
    check_parameter_count: (COUNT_RIGHT, COUNT_WRONG),
}
