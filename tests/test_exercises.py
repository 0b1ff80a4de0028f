"""Every exercise of the course: its check cell, its stub, its solution file and the `%load`
line that names it, and what every check promises (stub, errors, copies, random state).

The mistakes each check names are tested with the check's own module (test_checks.py,
test_causal_masking_checks.py, ...); the table at the end maps the mistakes the course
promises to recognise to the check and the hint that recognise each one.
"""

import re
import runpy
from pathlib import Path

import nbformat
import pytest
import torch
from torch import nn

from helpers.checks import (
    CORRECT,
    EXERCISES,
    INCORRECT,
    NOT_ATTEMPTED,
    check_blocked_positions,
    check_causal_attention_forward,
    check_causal_context,
    check_causal_padding_mask,
    check_mask_for_new_queries,
    check_masked_softmax,
    check_my_dropout,
    check_safe_masked_softmax,
    check_self_attention_weights,
    check_stable_softmax,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
IDS = [f"{exercise.notebook}:{exercise.solution}" for exercise in EXERCISES]


def read(notebook: str):
    return nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)


def sections(notebook: str):
    """The exercise sections of a notebook, in order: lists of cells from one
    ``### Exercise`` heading to the next."""
    found = []
    for cell in read(notebook).cells:
        if cell.cell_type == "markdown" and "### Exercise" in cell.source:
            for part in cell.source.split("### Exercise")[1:]:
                found.append([nbformat.v4.new_markdown_cell("### Exercise" + part)])
        elif found:
            found[-1].append(cell)
    return found


def section_of(exercise):
    mine = [e for e in EXERCISES if e.notebook == exercise.notebook]
    return sections(exercise.notebook)[mine.index(exercise)]


def solution(exercise):
    """The answer defined by the solution file, run as a learner's cell would run it."""
    return runpy.run_path(str(ROOT / exercise.solution_path))[exercise.answer]


def notebook_stub(exercise):
    """The stub as committed in the notebook, defined by running its imports and stub cells."""
    cells = [cell for cell in read(exercise.notebook).cells if cell.cell_type == "code"]
    imports = next(cell.source for cell in cells if "from helpers" in cell.source)
    definition = re.compile(rf"^(def|class) {exercise.answer}\b", re.MULTILINE)
    check_call = f"{exercise.check.__name__}({exercise.answer})"
    check_index = next(i for i, cell in enumerate(cells) if cell.source.strip() == check_call)
    stub = [cell.source for cell in cells[:check_index] if definition.search(cell.source)][-1]
    namespace = {}
    exec(imports, namespace)  # noqa: S102 - the notebook's own cells
    exec(stub, namespace)  # noqa: S102
    return namespace[exercise.answer]


# ---------------------------------------------------------------- the registry and the notebooks

def test_every_notebook_has_two_or_three_exercises():
    for path in NOTEBOOKS:
        count = sum(exercise.notebook == path.stem for exercise in EXERCISES)
        assert 2 <= count <= 3, f"{path.name} has {count} exercises"
        assert len(sections(path.stem)) == count, f"{path.name}: sections and registry differ"


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_check_cell_is_one_call(exercise):
    sources = [cell.source.strip() for cell in section_of(exercise) if cell.cell_type == "code"]
    assert f"{exercise.check.__name__}({exercise.answer})" in sources


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_exercise_names_its_solution_and_the_file_exists(exercise):
    assert (ROOT / exercise.solution_path).is_file(), f"missing {exercise.solution_path}"
    markdown = " ".join(cell.source for cell in section_of(exercise)
                        if cell.cell_type == "markdown")
    assert f"`{exercise.load_line}`" in markdown, f"{exercise.load_line} not in:\n{markdown}"


def test_every_solution_file_belongs_to_an_exercise():
    files = {path.relative_to(ROOT).as_posix() for path in (ROOT / "solutions").rglob("*.py")}
    assert files == {exercise.solution_path for exercise in EXERCISES}


def test_no_notebook_loads_a_solution():
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                assert "%load" not in cell.source and "solutions/" not in cell.source, (
                    f"{path.name} loads a solution:\n{cell.source}")
                for output in cell.outputs:
                    assert "solutions/" not in str(output), f"{path.name} shows a solution"


def test_the_load_path_works_from_the_notebooks_folder():
    for exercise in EXERCISES:
        relative = exercise.load_line.removeprefix("%load ")
        assert (ROOT / "notebooks" / relative).resolve() == (ROOT / exercise.solution_path)


def test_every_load_line_runs_in_a_kernel_started_in_the_notebooks_folder():
    from nbclient import NotebookClient

    lines = [exercise.load_line for exercise in EXERCISES] + ["%load ../solutions/none.py"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(line) for line in lines])
    NotebookClient(notebook, timeout=60, allow_errors=True,
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    errors = [[o.ename for o in cell.outputs if o.output_type == "error"]
              for cell in notebook.cells]
    assert errors[:-1] == [[]] * len(EXERCISES)
    assert errors[-1], "a missing file must fail, or this test proves nothing"


# ---------------------------------------------------------------- what every check promises

@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_solution_file_is_correct(exercise):
    feedback = exercise.check(solution(exercise))
    assert feedback.status == CORRECT, feedback.message
    assert feedback.message.startswith("Correct: ")


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_notebooks_stub_is_not_attempted(exercise):
    feedback = exercise.check(notebook_stub(exercise))
    assert feedback.status == NOT_ATTEMPTED, feedback.message
    assert feedback.message.startswith("Not attempted yet: complete ")
    assert exercise.answer in feedback.message


def raising(exercise):
    """An answer that fails with an ordinary error, wherever the check first calls it."""
    answer = solution(exercise)
    if isinstance(answer, type):
        class Raising(answer):
            def __init__(self, *args, **kwargs):
                raise ValueError("a slip in the learner's code")
        return Raising

    def function(*args, **kwargs):
        raise ValueError("a slip in the learner's code")
    return function


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_an_answer_that_raises_is_reported_not_raised(exercise):
    feedback = exercise.check(raising(exercise))
    assert feedback.status == INCORRECT
    assert "raised ValueError: a slip in the learner's code" in feedback.message


def shifted(exercise):
    """The solution's answer, made wrong: every tensor it returns is moved by 0.5."""
    answer = solution(exercise)
    if isinstance(answer, type):
        class Wrong(answer):
            def forward(self, x):
                return super().forward(x) + 0.5
        return Wrong

    def function(*args):
        result = answer(*args)
        if isinstance(result, torch.Tensor):
            return result.float() + 0.5 if result.dtype == torch.bool else result + 0.5
        return result + 1
    return function


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_no_feedback_prints_a_tensor(exercise):
    for answer in (solution(exercise), shifted(exercise)):
        feedback = exercise.check(answer)
        assert "tensor(" not in feedback.message and "[[" not in feedback.message, feedback
    assert exercise.check(shifted(exercise)).status == INCORRECT


def mutating(exercise):
    """The solution, which then changes in place every tensor and module it was given."""
    answer = solution(exercise)

    def spoil(arguments):
        with torch.no_grad():
            for argument in arguments:
                if isinstance(argument, torch.Tensor) and argument.is_floating_point():
                    argument.add_(1.0)
                elif isinstance(argument, torch.Tensor) and argument.dtype == torch.bool:
                    argument.logical_not_()
                elif isinstance(argument, nn.Module):
                    for parameter in argument.parameters():
                        parameter.zero_()

    if isinstance(answer, type):
        class Mutating(answer):
            def forward(self, x):
                result = super().forward(x)
                spoil([x])  # its own parameters are its own: only the input is the check's
                return result
        return Mutating

    def function(*args):
        result = answer(*args)
        if isinstance(result, torch.Tensor):
            result = result.clone()  # not a view of the inputs spoiled next (split_heads's is)
        spoil(args)
        return result
    return function


# my_dropout's check reports a change of its input: that is one of the exercise's rules.
@pytest.mark.parametrize("exercise", [e for e in EXERCISES if e.answer != "my_dropout"],
                         ids=[i for e, i in zip(EXERCISES, IDS, strict=True)
                              if e.answer != "my_dropout"])
def test_a_learner_changing_its_inputs_cannot_change_the_checks_data(exercise):
    """The check hands out copies: a right answer that then spoils its inputs (and its
    module's parameters) is still judged against the check's own, untouched data."""
    first = exercise.check(mutating(exercise))
    assert first.status == CORRECT, first.message
    assert exercise.check(solution(exercise)).status == CORRECT


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_a_check_gives_the_global_generator_back(exercise):
    state = torch.get_rng_state()
    exercise.check(solution(exercise))
    exercise.check(notebook_stub(exercise))
    assert torch.equal(torch.get_rng_state(), state)


# ---------------------------------------------------------------- the mistakes the course names

def masked_fill_mask(n, t):
    return torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)[-n:]  # True = blocked


def dropout_before_softmax(queries, keys, values, dropout):
    scores = queries @ keys.T / keys.shape[-1] ** 0.5
    blocked = torch.ones(len(keys), len(keys), dtype=torch.bool).triu(diagonal=1)
    return torch.softmax(dropout(scores).masked_fill(blocked, float("-inf")), -1) @ values


def dropout_unscaled(weights, p, generator=None):
    if p == 1:
        return torch.zeros_like(weights)
    return weights * (torch.rand(weights.shape, generator=generator) >= p)


def not_sliced_class():
    from helpers.attention import CausalAttention

    class Answer(CausalAttention):
        def forward(self, x):
            q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
            scores = (q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5)
            return torch.softmax(scores.masked_fill(~self.causal_mask, float("-inf")), -1) @ v
    return Answer


def self_attention_with(weights_of):
    def function(x, W_query, W_key):
        return weights_of(W_query(x), W_key(x))
    return function


def padding_with(build):
    from helpers.attention import causal_mask, padding_mask

    def function(lengths, T, side):
        return build(causal_mask(T), padding_mask(lengths, T, side=side))
    return function


def loss_free_nan_rows(scores, allowed):
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)


COURSE_MISTAKES = {
    "triu and tril swapped": (check_blocked_positions,
                              lambda T: torch.ones(T, T, dtype=torch.bool).tril(), "MAY attend"),
    "diagonal off by one (blocked)": (check_blocked_positions,
                                      lambda T: torch.ones(T, T, dtype=torch.bool).triu(),
                                      "diagonal is blocked too"),
    "diagonal off by one (the next token seen)": (
        check_blocked_positions, lambda T: torch.ones(T, T, dtype=torch.bool).triu(diagonal=2),
        "key i + 1"),
    "inverted mask for scaled_dot_product_attention": (
        check_mask_for_new_queries, masked_fill_mask, "F.scaled_dot_product_attention reads"),
    "softmax over the wrong dimension": (
        check_stable_softmax, lambda s: torch.softmax(s, dim=0), "each column sums to 1"),
    "not scaled": (check_self_attention_weights,
                   self_attention_with(lambda q, k: torch.softmax(q @ k.T, -1)), "not scaled"),
    "scaled by the wrong dimension": (
        check_self_attention_weights,
        self_attention_with(lambda q, k: torch.softmax(q @ k.T / 3**0.5, -1)), "sqrt(d_in)"),
    "masked after the softmax, not renormalised": (
        check_masked_softmax, lambda s, m: torch.softmax(s, -1) * m, "no longer sum to 1"),
    "dropout before the softmax": (check_causal_context, dropout_before_softmax,
                                   "before the softmax"),
    "dropout without 1/(1-p)": (check_my_dropout, dropout_unscaled, "not scaled: multiply"),
    "padded queries masked instead of keys": (
        check_causal_padding_mask,
        padding_with(lambda c, p: c & p[:, None, :, None]), "hides padded QUERIES"),
    "mask not sliced to T": (check_causal_attention_forward, not_sliced_class(),
                             "self.causal_mask[:T, :T]"),
    "NaN rows left in the output": (check_safe_masked_softmax, loss_free_nan_rows,
                                    "NaN in the rows with no allowed key"),
}


@pytest.mark.parametrize("mistake", COURSE_MISTAKES)
def test_each_mistake_the_course_names_is_recognised(mistake):
    check, answer, hint = COURSE_MISTAKES[mistake]
    feedback = check(answer)
    assert feedback.status == INCORRECT and hint in feedback.message, feedback.message


def test_each_of_those_mistakes_gets_its_own_hint():
    messages = [check(answer).message for check, answer, _ in COURSE_MISTAKES.values()]
    assert len(set(messages)) == len(messages)
