"""Notebook 08's exercise checks: a table of right and wrong answers per check, and what
every check promises (tests/checks/test_exercises.py), run here on notebook 08's exercises
until they are registered in helpers.checks.EXERCISES."""

import math
import re

import nbformat
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from support import ROOT, assert_gives_nothing_away, assert_judged

from helpers.attention import position_ids
from helpers.checks import CORRECT, INCORRECT, NOT_ATTEMPTED, Check, Exercise
from helpers.checks.generation import (
    check_attend_over_cache,
    check_kv_cache_bytes,
    check_next_position_ids,
)

NOTEBOOK = "08_generation_kv_cache"
EXERCISES_08 = (
    Exercise(NOTEBOOK, "kv_cache_bytes", check_kv_cache_bytes, "kv_cache_bytes.py"),
    Exercise(NOTEBOOK, "attend_over_cache", check_attend_over_cache, "attend_over_cache.py"),
    Exercise(NOTEBOOK, "next_position_ids", check_next_position_ids, "next_position_ids.py"),
)
IDS = [exercise.answer for exercise in EXERCISES_08]
SIZES_ONLY = {"kv_cache_bytes"}
BROKEN_KINDS = ["None", "a float", "a string", "a tuple", "another device", "NaN"]


def shared():
    """tests/checks/test_exercises.py, imported when first needed: once these exercises
    are registered, it imports this module for its TABLES (no import cycle)."""
    import test_exercises

    assert list(test_exercises.BROKEN) == BROKEN_KINDS
    return test_exercises


def exercise_of(check):
    return next(exercise for exercise in EXERCISES_08 if exercise.check is check)


def table_tests(check, right: dict, wrong: dict):
    """As support.table_tests, for exercises not (yet) in helpers.checks.EXERCISES."""
    exercise = exercise_of(check)

    @pytest.mark.parametrize("style", list(right))
    def test_right(style):
        feedback = check(right[style])
        assert_judged(feedback)
        assert feedback.status == CORRECT, feedback.message
        assert feedback.remark == ""
        assert_gives_nothing_away(exercise, feedback)

    @pytest.mark.parametrize("slip", list(wrong))
    def test_wrong(slip):
        answer, diagnosis = wrong[slip]
        feedback = check(answer)
        assert_judged(feedback)
        assert feedback.status == INCORRECT, feedback.message
        assert diagnosis in feedback.message, feedback.message
        assert feedback.hint_text, f"no hint for: {feedback.message}"
        assert f"{check.__name__}.hint()" in repr(feedback)
        assert check.hint().text == feedback.hint_text
        assert_gives_nothing_away(exercise, feedback)

    return test_right, test_wrong


# ---------------------------------------------------------------- cache memory


def bytes_by_element_size(B, T, num_layers, num_heads, head_dim, dtype):
    size = torch.empty(0, dtype=dtype).element_size()
    return 2 * B * T * num_layers * num_heads * head_dim * size


def bytes_by_itemsize(B, T, num_layers, num_heads, head_dim, dtype):
    return B * T * num_layers * 2 * num_heads * head_dim * dtype.itemsize


def bytes_by_finfo(B, T, num_layers, num_heads, head_dim, dtype):
    return 2 * num_layers * B * T * num_heads * head_dim * torch.finfo(dtype).bits // 8


def bytes_by_building_the_cache(B, T, num_layers, num_heads, head_dim, dtype):
    one = torch.zeros(B, num_heads, T, head_dim, dtype=dtype)
    return 2 * num_layers * one.numel() * one.element_size()


def bytes_as_tensor(B, T, num_layers, num_heads, head_dim, dtype):
    return torch.tensor(bytes_by_itemsize(B, T, num_layers, num_heads, head_dim, dtype))


def slip(change):
    def function(B, T, num_layers, num_heads, head_dim, dtype):
        return change(B, T, num_layers, num_heads, head_dim, dtype.itemsize)
    return function


BYTES_RIGHT = {
    "element_size": bytes_by_element_size,
    "dtype.itemsize": bytes_by_itemsize,
    "finfo bits": bytes_by_finfo,
    "a tensor of the cache's shape": bytes_by_building_the_cache,
    "a one-element tensor": bytes_as_tensor,
}

BYTES_WRONG = {
    "keys only": (slip(lambda B, T, L, H, d, n: B * T * L * H * d * n), "not both"),
    "no batch": (slip(lambda B, T, L, H, d, n: 2 * T * L * H * d * n), "batch is missing"),
    "no layers": (slip(lambda B, T, L, H, d, n: 2 * B * T * H * d * n), "layers are missing"),
    "no heads": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * d * n), "heads are missing"),
    "heads twice": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * H * d * n),
                    "counted twice"),
    "numbers, not bytes": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * d),
                           "counts numbers, not bytes"),
    "bits": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * d * n * 8), "counts bits"),
    "always 4 bytes": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * d * 4),
                       "counted as 4 bytes"),
    "T + 1": (slip(lambda B, T, L, H, d, n: 2 * B * (T + 1) * L * H * d * n),
              "one token too many"),
    "in GiB": (slip(lambda B, T, L, H, d, n: 2 * B * T * L * H * d * n / 1024**3),
               "not a whole number"),
    "something else": (slip(lambda B, T, L, H, d, n: 3 * B * T * L * H * d * n + 1),
                       "too many"),
    "a list": (lambda *sizes: [bytes_by_itemsize(*sizes)], "a list"),
    "no return": (lambda *sizes: None, "None"),
}

test_bytes_right, test_bytes_wrong = table_tests(check_kv_cache_bytes, BYTES_RIGHT, BYTES_WRONG)


# ---------------------------------------------------------------- attend over the cache


def attend_by_hand(query, cached_keys, cached_values, new_key, new_value):
    keys = torch.cat([cached_keys, new_key], dim=2)
    values = torch.cat([cached_values, new_value], dim=2)
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
    return torch.softmax(scores, dim=-1) @ values


def attend_sdpa(query, cached_keys, cached_values, new_key, new_value):
    keys = torch.cat([cached_keys, new_key], dim=-2)
    values = torch.cat([cached_values, new_value], dim=-2)
    return F.scaled_dot_product_attention(query, keys, values)


def attend_new_first(query, cached_keys, cached_values, new_key, new_value):
    keys = torch.cat([new_key, cached_keys], dim=2)  # the same keys in another order
    values = torch.cat([new_value, cached_values], dim=2)  # and the values in the same one
    return F.scaled_dot_product_attention(query, keys, values)


def attend_with_lower_right_mask(query, cached_keys, cached_values, new_key, new_value):
    from torch.nn.attention.bias import causal_lower_right

    keys = torch.cat([cached_keys, new_key], dim=2)
    values = torch.cat([cached_values, new_value], dim=2)
    mask = causal_lower_right(1, keys.shape[2])
    return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask)


def attend_float64(query, cached_keys, cached_values, new_key, new_value):
    return attend_by_hand(query.double(), cached_keys.double(), cached_values.double(),
                          new_key.double(), new_value.double()).float()


def with_both(function):
    def answer(query, cached_keys, cached_values, new_key, new_value):
        keys = torch.cat([cached_keys, new_key], dim=2)
        values = torch.cat([cached_values, new_value], dim=2)
        return function(query, keys, values)
    return answer


ATTEND_RIGHT = {
    "by hand": attend_by_hand,
    "F.scaled_dot_product_attention": attend_sdpa,
    "new token first": attend_new_first,
    "causal_lower_right": attend_with_lower_right_mask,
    "float64": attend_float64,
}

ATTEND_WRONG = {
    "cache only": (lambda q, ck, cv, nk, nv: F.scaled_dot_product_attention(q, ck, cv),
                   "cached tokens only"),
    "is_causal=True": (with_both(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True)), "aligned top-left"),
    "no scale": (with_both(lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1), -1) @ v),
                 "not scaled"),
    "divided by head_dim": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1) / q.shape[-1], -1) @ v), "not by its square root"),
    "scaled by d_model": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1) / math.sqrt(q.shape[1] * q.shape[-1]), -1) @ v),
        "sqrt(H * head_dim)"),
    "values in another order": (lambda q, ck, cv, nk, nv: F.scaled_dot_product_attention(
        q, torch.cat([ck, nk], 2), torch.cat([nv, cv], 2)), "not in the same order"),
    "softmax over the queries": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1), dim=-2) @ v), "over the queries axis"),
    "weights returned": (with_both(lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)), "attention weights"),
    "cat on the heads": (lambda q, ck, cv, nk, nv: F.scaled_dot_product_attention(
        q, torch.cat([ck, nk], dim=1), torch.cat([cv, nv], dim=1)), "other than the tokens"),
    "keys not transposed": (with_both(lambda q, k, v: torch.softmax(
        q @ k / math.sqrt(q.shape[-1]), -1) @ v), "do not fit a matrix product"),
    "shape (B, H, head_dim)": (lambda *args: attend_by_hand(*args)[:, :, 0], "returned shape"),
    "no return": (lambda *args: None, "`return`"),
}

test_attend_right, test_attend_wrong = table_tests(check_attend_over_cache, ATTEND_RIGHT,
                                                   ATTEND_WRONG)


# ---------------------------------------------------------------- next positions


POSITIONS_RIGHT = {
    "sum, keepdim": lambda is_token: is_token.sum(dim=-1, keepdim=True),
    "long sum, then a column": lambda is_token: is_token.long().sum(1)[:, None],
    "position_ids + 1": lambda is_token: position_ids(is_token)[:, -1:] + 1,
    "cumsum": lambda is_token: is_token.int().cumsum(dim=-1)[:, -1:],
    "NumPy": lambda is_token: torch.from_numpy(np.count_nonzero(is_token.numpy(), axis=1)
                                               .reshape(-1, 1)),
}

POSITIONS_WRONG = {
    "columns": (lambda m: torch.full((m.shape[0], 1), m.shape[1]), "number of columns"),
    "arange": (lambda m: torch.arange(m.shape[1] + 1)[-1:].expand(m.shape[0], 1),
               "number of columns"),
    "last real token": (lambda m: m.sum(-1, keepdim=True) - 1, "last real token"),
    "position_ids, last": (lambda m: position_ids(m)[:, -1:], "last real token"),
    "last column's index": (lambda m: torch.full((m.shape[0], 1), m.shape[1] - 1),
                            "last column's index"),
    "padding counted": (lambda m: (~m).sum(-1, keepdim=True), "counts the padding"),
    "one per row": (lambda m: m.sum(-1), "one number per row"),
    "over the batch": (lambda m: m.sum(0), "summed over the batch"),
    "float mean": (lambda m: m.float().sum(-1, keepdim=True), "must be integers"),
    "bool": (lambda m: m[:, -1:], "must be integers"),
    "changes is_token": (lambda m: m.logical_not_().sum(-1, keepdim=True), "in place"),
    "no return": (lambda m: None, "`return`"),
    "another device": (lambda m: m.sum(-1, keepdim=True).to("meta"), "on device 'meta'"),
}

test_positions_right, test_positions_wrong = table_tests(check_next_position_ids,
                                                         POSITIONS_RIGHT, POSITIONS_WRONG)

TABLES = {check_kv_cache_bytes: (BYTES_RIGHT, BYTES_WRONG),
          check_attend_over_cache: (ATTEND_RIGHT, ATTEND_WRONG),
          check_next_position_ids: (POSITIONS_RIGHT, POSITIONS_WRONG)}


# ---------------------------------------------------------------- what every check promises


@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_every_check_has_a_table_of_answers(exercise):
    right, wrong = TABLES[exercise.check]
    assert len(right) >= 3 and len(wrong) >= 8
    assert len({diagnosis for _answer, diagnosis in wrong.values()}) >= 6


@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_the_solution_file_is_correct(exercise):
    feedback = exercise.check(shared().solution(exercise))
    assert feedback.status == CORRECT, feedback.message
    assert feedback.message.startswith("Correct: ") and feedback.remark == ""


def notebook_stub(exercise):
    """The stub as committed in the notebook, run after the notebook's imports."""
    path = ROOT / "notebooks" / f"{NOTEBOOK}.ipynb"
    if not path.exists():
        pytest.skip(f"{path.name} is not in notebooks/ (a draft)")
    cells = [cell.source for cell in nbformat.read(path, as_version=4).cells
             if cell.cell_type == "code"]
    definition = re.compile(rf"^(def|class) {exercise.answer}\b", re.MULTILINE)
    stubs = [source for source in cells if definition.search(source)]
    assert len(stubs) == 1, f"{exercise.answer}: one stub cell, found {len(stubs)}"
    namespace = {}
    exec(next(source for source in cells if "from helpers" in source), namespace)  # noqa: S102
    exec(stubs[0], namespace)  # noqa: S102
    return namespace[exercise.answer]


@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_the_notebooks_stub_is_not_attempted_and_the_hint_is_the_general_one(exercise):
    check = exercise.check
    feedback = check(notebook_stub(exercise))
    assert feedback.status == NOT_ATTEMPTED, feedback.message
    assert exercise.answer in feedback.message
    assert isinstance(check, Check) and check.hint().text == check.general_hint
    assert_gives_nothing_away(exercise, feedback)


@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_the_notebook_names_the_check_the_hint_and_the_load_line(exercise):
    path = ROOT / "notebooks" / f"{NOTEBOOK}.ipynb"
    if not path.exists():
        pytest.skip(f"{path.name} is not in notebooks/ (a draft)")
    cells = nbformat.read(path, as_version=4).cells
    sources = [cell.source.strip() for cell in cells if cell.cell_type == "code"]
    assert f"{exercise.check.__name__}({exercise.answer})" in sources
    markdown = " ".join(cell.source for cell in cells if cell.cell_type == "markdown")
    assert f"`{exercise.load_line}`" in markdown
    assert f"`{exercise.check.__name__}.hint()`" in markdown
    assert (ROOT / "notebooks" / exercise.load_line.removeprefix("%load ")).resolve() == \
        (ROOT / exercise.solution_path)


@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_an_answer_that_raises_is_reported_not_raised(exercise):
    feedback = exercise.check(shared().raising(exercise))
    assert feedback.status == INCORRECT
    assert "raised ValueError: a slip in the learner's code" in feedback.message
    hint = exercise.check.hint()
    assert hint.text and hint.text not in feedback.message


@pytest.mark.parametrize("kind", BROKEN_KINDS)
@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_a_broken_answer_gets_a_message_and_the_check_never_fails(exercise, kind):
    transform, words = shared().BROKEN[kind]
    feedback = exercise.check(shared().broken(exercise, transform))
    assert_judged(feedback)
    assert feedback.status == INCORRECT, feedback.message
    assert words in feedback.message
    if kind == "another device":
        assert "device" in feedback.message or "a Tensor" in feedback.message


@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_a_learner_changing_its_inputs_is_told_and_cannot_change_the_checks_data(exercise):
    feedback = exercise.check(shared().mutating(exercise))
    assert_judged(feedback)
    if exercise.answer in SIZES_ONLY:
        assert feedback.status == CORRECT, feedback.message
    else:
        assert feedback.status == INCORRECT and "in place" in feedback.message, feedback.message
    assert exercise.check(shared().solution(exercise)).status == CORRECT


@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_a_check_gives_the_global_generator_back(exercise):
    def reseeding(result):
        torch.manual_seed(1234)
        torch.rand(3)
        return result

    state = torch.get_rng_state()
    exercise.check(shared().solution(exercise))
    exercise.check(shared().broken(exercise, reseeding))
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("exercise", EXERCISES_08, ids=IDS)
def test_no_feedback_prints_a_tensor(exercise):
    def shifted(result):
        if isinstance(result, torch.Tensor):
            return result.float() + 0.5 if result.dtype == torch.bool else result + 0.5
        return result + 1
    for answer in (shared().solution(exercise), shared().broken(exercise, shifted)):
        feedback = exercise.check(answer)
        assert "tensor(" not in repr(feedback) and "[[" not in repr(feedback), feedback
    assert exercise.check(shared().broken(exercise, shifted)).status == INCORRECT
