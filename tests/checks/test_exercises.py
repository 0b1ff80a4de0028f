"""Every exercise of the course: its check cell, its stub, its solution file and the `%load`
line that names it, and what every check promises (stub, errors, broken answers, copies,
random state, hints). The mistakes each check names are in the tables of the other modules
of this folder, one per notebook."""

import importlib
import re
import runpy

import nbformat
import pytest
import torch
from torch import nn

from helpers.checks import CORRECT, INCORRECT, NOT_ATTEMPTED, Check
from tests.checks.support import ROOT, assert_gives_nothing_away, assert_judged
from tools.course import exercises, notebooks

EXERCISES = exercises()
NOTEBOOKS = [ROOT / notebook.path for notebook in notebooks()]
IDS = [f"{exercise.notebook}:{exercise.solution}" for exercise in EXERCISES]
TABLES = {check: table for notebook in notebooks() if notebook.exercises
          for check, table in importlib.import_module(
              f"tests.checks.test_{notebook.checks}_checks").TABLES.items()}


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
    """The stub as committed in the exercise's own section, defined by running the
    notebook's imports and the section's stub cell."""
    cells = [cell for cell in read(exercise.notebook).cells if cell.cell_type == "code"]
    imports = next(cell.source for cell in cells if "from helpers" in cell.source)
    definition = re.compile(rf"^(def|class) {exercise.answer}\b", re.MULTILINE)
    stubs = [cell.source for cell in section_of(exercise)
             if cell.cell_type == "code" and definition.search(cell.source)]
    assert len(stubs) == 1, f"{exercise.answer}: one stub cell in its section, found {len(stubs)}"
    namespace = {}
    exec(imports, namespace)  # noqa: S102 - the notebook's own cells
    exec(stubs[0], namespace)  # noqa: S102
    return namespace[exercise.answer]


# ---------------------------------------------------------------- the registry and the notebooks

def test_every_notebook_has_two_to_four_exercises():
    for path in NOTEBOOKS:
        count = sum(exercise.notebook == path.stem for exercise in EXERCISES)
        assert 2 <= count <= 4, f"{path.name} has {count} exercises"
        assert len(sections(path.stem)) == count, f"{path.name}: sections and registry differ"


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_check_cell_is_one_call_after_its_own_stub(exercise):
    cells = [cell for cell in section_of(exercise) if cell.cell_type == "code"]
    sources = [cell.source.strip() for cell in cells]
    call = f"{exercise.check.__name__}({exercise.answer})"
    assert call in sources
    stub_index = next(i for i, source in enumerate(sources)
                      if re.search(rf"^(def|class) {exercise.answer}\b", source, re.MULTILINE))
    assert stub_index < sources.index(call)


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_exercise_names_its_solution_and_its_hint(exercise):
    assert (ROOT / exercise.solution_path).is_file(), f"missing {exercise.solution_path}"
    markdown = " ".join(cell.source for cell in section_of(exercise)
                        if cell.cell_type == "markdown")
    assert f"`{exercise.load_line}`" in markdown, f"{exercise.load_line} not in:\n{markdown}"
    assert f"`{exercise.check.__name__}.hint()`" in markdown, markdown


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


# ---------------------------------------------------------------- the tables

@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_every_check_has_a_table_of_answers(exercise):
    right, wrong = TABLES[exercise.check]
    assert len(right) >= 3, f"{exercise.check.__name__}: {len(right)} right answers"
    assert len(wrong) >= 8, f"{exercise.check.__name__}: {len(wrong)} wrong answers"
    diagnoses = [diagnosis for _answer, diagnosis in wrong.values()]
    assert len(set(diagnoses)) >= 6, "the wrong answers should need different diagnoses"


# ---------------------------------------------------------------- what every check promises

@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_solution_file_is_correct(exercise):
    feedback = exercise.check(solution(exercise))
    assert feedback.status == CORRECT, feedback.message
    assert feedback.message.startswith("Correct: ") and feedback.remark == ""
    assert repr(feedback) == feedback.message


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_notebooks_stub_is_not_attempted_and_the_hint_is_the_general_one(exercise):
    check = exercise.check
    feedback = check(notebook_stub(exercise))
    assert feedback.status == NOT_ATTEMPTED, feedback.message
    assert feedback.message.startswith("Not attempted yet: complete ")
    assert exercise.answer in feedback.message
    assert isinstance(check, Check) and check.hint().text == check.general_hint
    assert repr(check.hint()).startswith("Hint: ")
    assert_gives_nothing_away(exercise, feedback)


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


def called_method(cls) -> str:
    """The method a check calls on the learner's class: a module's forward, a cache's
    append."""
    return "forward" if issubclass(cls, nn.Module) else "append"


def with_method(cls, make):
    """A subclass of ``cls`` whose called method is ``make(the original method)``."""
    name = called_method(cls)
    return type(f"Changed{cls.__name__}", (cls,), {name: make(getattr(cls, name))})


def broken(exercise, transform):
    """The solution, with transform applied to whatever it returns."""
    answer = solution(exercise)
    if isinstance(answer, type):
        return with_method(answer, lambda method: lambda self, *args, **kwargs: transform(
            method(self, *args, **kwargs)))

    def function(*args):
        return transform(answer(*args))
    return function


def on_meta(result):
    if isinstance(result, tuple):  # a pair of tensors (a cache's keys and values)
        return tuple(on_meta(part) for part in result)
    tensor = result if isinstance(result, torch.Tensor) else torch.tensor(result)
    return tensor.to("meta")


def nan_like(result):
    if isinstance(result, tuple):
        return tuple(nan_like(part) for part in result)
    tensor = result if isinstance(result, torch.Tensor) else torch.tensor(float(result))
    return torch.full_like(tensor.float(), float("nan"))


BROKEN = {
    "None": (lambda result: None, "None"),
    "a float": (lambda result: 1.5, "float"),
    "a string": (lambda result: "done", "str"),
    "a tuple": (lambda result: (result, result), "tuple"),
    "another device": (on_meta, "'meta'"),
    "NaN": (nan_like, ""),
}


@pytest.mark.parametrize("kind", list(BROKEN))
@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_a_broken_answer_gets_a_message_and_the_check_never_fails(exercise, kind):
    transform, words = BROKEN[kind]
    feedback = exercise.check(broken(exercise, transform))
    assert_judged(feedback)
    assert feedback.status == INCORRECT, feedback.message
    assert words in feedback.message
    if kind == "another device":
        assert "device" in feedback.message or "a Tensor" in feedback.message


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_no_feedback_prints_a_tensor(exercise):
    def shifted(result):
        if isinstance(result, tuple):
            return tuple(shifted(part) for part in result)
        if isinstance(result, torch.Tensor):
            return result.float() + 0.5 if result.dtype == torch.bool else result + 0.5
        return result + 1
    for answer in (solution(exercise), broken(exercise, shifted)):
        feedback = exercise.check(answer)
        assert "tensor(" not in repr(feedback) and "[[" not in repr(feedback), feedback
    assert exercise.check(broken(exercise, shifted)).status == INCORRECT


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
        def make(method):
            def spoiling(self, *args):
                result = method(self, *args)
                spoil(args)  # its own parameters are its own: only the inputs are the check's
                return result
            return spoiling
        return with_method(answer, make)

    def function(*args):
        result = answer(*args)
        if isinstance(result, torch.Tensor):
            result = result.clone()  # not a view of the inputs spoiled next (split_heads's is)
        spoil(args)
        return result
    return function


# The exercises whose answers are given no float or boolean tensor and no module: sizes and
# lengths only (the spoiler changes float and boolean tensors).
SIZES_ONLY = {"blocked_positions", "mask_for_new_queries", "attention_parameter_count",
              "kv_cache_bytes", "key_padding_mask"}


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_a_learner_changing_its_inputs_is_told_and_cannot_change_the_checks_data(exercise):
    """The check hands out copies and compares them afterwards: a right answer that then
    spoils its inputs is told so, and the check's own data stays as it was."""
    feedback = exercise.check(mutating(exercise))
    assert_judged(feedback)
    if exercise.answer in SIZES_ONLY:
        assert feedback.status == CORRECT, feedback.message
    else:
        assert feedback.status == INCORRECT and "in place" in feedback.message, feedback.message
    assert exercise.check(solution(exercise)).status == CORRECT


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_a_check_gives_the_global_generator_back(exercise):
    def reseeding(result):
        torch.manual_seed(1234)  # an answer that seeds the global generator
        torch.rand(3)
        return result

    state = torch.get_rng_state()
    exercise.check(solution(exercise))
    exercise.check(notebook_stub(exercise))
    exercise.check(broken(exercise, reseeding))
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_feedback_of_a_wrong_answer_levels_up_to_a_hint(exercise):
    check = exercise.check
    feedback = check(raising(exercise))
    hint = check.hint()
    assert hint.text and hint.text == feedback.hint().text
    assert hint.text not in feedback.message  # the hint is a further level, not a repeat
    assert f"Stuck? {check.__name__}.hint() nudges further." in repr(feedback)
    check(solution(exercise))
    assert check.hint().text.startswith("nothing to fix")
