"""Notebook 05's exercise checks: a right answer, a stub and each known wrong answer get
their own feedback."""

import pytest
import torch
from exercise_support import assert_hint, stub

from helpers.checks import (
    CORRECT,
    NOT_ATTEMPTED,
    check_merge_heads,
    check_parameter_count,
    check_split_heads,
)


def split_right(x, num_heads):
    B, T, d_out = x.shape
    return x.view(B, T, num_heads, d_out // num_heads).transpose(1, 2)


def merge_right(context):
    B, H, T, head_dim = context.shape
    return context.transpose(1, 2).contiguous().view(B, T, H * head_dim)


def count_right(d_in, d_out, num_heads, qkv_bias):
    return 3 * (d_in * d_out + (d_out if qkv_bias else 0)) + d_out * d_out + d_out


SPLIT_MISTAKES = {
    "straight to (B, H, T, head_dim)": (
        lambda x, h: x.view(x.shape[0], h, x.shape[1], x.shape[2] // h), "mixes tokens into heads"),
    "head_dim and H swapped": (
        lambda x, h: x.view(x.shape[0], x.shape[1], -1, h).transpose(1, 2),
        "head_dim is d_out // num_heads"),
    "strided heads": (lambda x, h: x.view(*x.shape[:2], x.shape[2] // h, h).permute(0, 3, 1, 2),
                      "every H-th feature"),
    "fixed head_dim": (lambda x, h: x.view(x.shape[0], x.shape[1], h, 4).transpose(1, 2),
                       "head_dim is d_out // num_heads (take d_out from x.shape)"),
    "no transpose": (lambda x, h: x.view(x.shape[0], x.shape[1], h, x.shape[2] // h),
                     "heads must come before the tokens"),
    "heads reversed": (lambda x, h: split_right(x, h).flip(1), "head 0 does not hold features"),
    "no return": (lambda x, h: None, "`return`"),
}

MERGE_MISTAKES = {
    "view without contiguous": (lambda c: c.transpose(1, 2).view(c.shape[0], c.shape[2], -1),
                                ".contiguous()"),
    "no transpose back": (lambda c: c.reshape(c.shape[0], c.shape[2], -1),
                          "transpose(1, 2) back"),
    "interleaved": (lambda c: c.permute(0, 2, 3, 1).reshape(c.shape[0], c.shape[2], -1),
                    "interleaved"),
    "not joined": (lambda c: c.transpose(1, 2), "returned shape (2, 6, 3, 4)"),
    "heads reversed": (lambda c: merge_right(c.flip(1)), "are not head 0's vector"),
}

COUNT_MISTAKES = {
    "out_proj bias missing": (lambda i, o, h, b: count_right(i, o, h, b) - o, "has a bias even"),
    "qkv bias ignored": (lambda i, o, h, b: count_right(i, o, h, False), "each have a bias"),
    "qkv bias always": (lambda i, o, h, b: count_right(i, o, h, True), "have no bias"),
    "out_proj missing": (lambda i, o, h, b: count_right(i, o, h, b) - o * o - o,
                         "out_proj, an nn.Linear(d_out, d_out), is missing"),
    "depends on heads": (lambda i, o, h, b: count_right(i, o, h, b) + h,
                         "should not depend on num_heads"),
    "per-head weights": (lambda i, o, h, b: count_right(i, o * h, 1, b), "should not depend"),
    "far off": (lambda i, o, h, b: 1, "too few"),
    "a string": (lambda i, o, h, b: str(count_right(i, o, h, b)), "returned a str"),
}


def test_split_accepts_the_right_answer_and_reshape():
    assert check_split_heads(split_right).status == CORRECT
    assert check_split_heads(
        lambda x, h: x.reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3)).status == CORRECT


def test_merge_accepts_the_right_answer_and_reshape():
    assert check_merge_heads(merge_right).status == CORRECT
    assert check_merge_heads(
        lambda c: c.transpose(1, 2).reshape(c.shape[0], c.shape[2], -1)).status == CORRECT


def test_count_accepts_the_right_answer_and_a_tensor_holding_it():
    assert check_parameter_count(count_right).status == CORRECT
    assert check_parameter_count(
        lambda *size: torch.tensor(count_right(*size))).status == CORRECT


@pytest.mark.parametrize("check", [check_split_heads, check_merge_heads, check_parameter_count])
def test_multi_head_checks_say_not_attempted_for_the_stub(check):
    assert check(stub).status == NOT_ATTEMPTED


@pytest.mark.parametrize("mistake", SPLIT_MISTAKES)
def test_split_names_each_mistake(mistake):
    answer, hint = SPLIT_MISTAKES[mistake]
    assert_hint(check_split_heads(answer), hint)


@pytest.mark.parametrize("mistake", MERGE_MISTAKES)
def test_merge_names_each_mistake(mistake):
    answer, hint = MERGE_MISTAKES[mistake]
    assert_hint(check_merge_heads(answer), hint)


@pytest.mark.parametrize("mistake", COUNT_MISTAKES)
def test_count_names_each_mistake(mistake):
    answer, hint = COUNT_MISTAKES[mistake]
    assert_hint(check_parameter_count(answer), hint)
