"""Shared by the tables of exercise answers (tests/checks/test_*_checks.py).

Each table module defines, per check, RIGHT answers (a dict: style -> answer, in at least
three styles) and WRONG answers (a dict: slip -> (answer, a phrase the message must
contain)), lists them in its ``TABLES`` (check -> (RIGHT, WRONG)) and hands each pair to
``table_tests``, which turns it into parametrised tests.
"""

import ast
import re
from pathlib import Path

import pytest

from helpers.checks import CORRECT, INCORRECT
from helpers.checks.feedback import CHECK_FAILED
from tools.course import exercises

ROOT = Path(__file__).resolve().parents[2]


def stub(*args, **kwargs):
    """An exercise left as handed out: its body raises NotImplementedError."""
    raise NotImplementedError


def exercise_of(check):
    return next(exercise for exercise in exercises() if exercise.check is check)


def code_fragments(exercise):
    """The solution's lines of code, without comments, docstrings, imports or definitions,
    each as the expression a learner could copy (whitespace removed)."""
    source = (ROOT / exercise.solution_path).read_text(encoding="utf-8")
    docstrings = {node.body[0].value.lineno for node in ast.walk(ast.parse(source))
                  if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    fragments = []
    for number, line in enumerate(source.splitlines(), start=1):
        code = line.split("#")[0].strip()
        if (not code or number in docstrings or code.startswith(("import", "from", "def ",
                                                                   "class ", '"""', "assert"))):
            continue
        expression = code.split("=", 1)[1] if re.match(r"^[\w., ]+=[^=]", code) else code
        expression = re.sub(r"^return\s+", "", expression.strip())
        expression = re.sub(r"\s+", "", expression)
        if len(expression) >= 16:
            fragments.append(expression)
    return fragments


def assert_gives_nothing_away(exercise, feedback, giveaways=()):
    """No message or hint holds a line of the solution, a fragment that is the fix
    (``giveaways``), or a printed tensor."""
    texts = [feedback.message, feedback.hint_text, feedback.remark, repr(feedback.hint())]
    for text in texts:
        flat = re.sub(r"\s+", "", text)
        for fragment in [*code_fragments(exercise), *giveaways]:
            assert re.sub(r"\s+", "", fragment) not in flat, (fragment, text)
        assert "tensor(" not in text and "[[" not in text, text


def assert_judged(feedback):
    """The check judged the answer itself: it did not fail on it."""
    assert not feedback.check_failed, feedback.message
    assert CHECK_FAILED not in feedback.message, feedback.message


# The most words a wrong answer's message may have, as printed: a diagnosis of about 50
# words, with the error it quotes and the case it was found on. The rest goes in the hint.
MOST_WORDS = 80


def table_tests(check, right: dict, wrong: dict, *, giveaways=(), remarks=None):
    """Two parametrised tests for one check's table: every right answer is Correct, every
    wrong one Incorrect with its diagnosis and a hint that gives nothing away."""
    remarks = remarks or {}
    exercise = exercise_of(check)

    @pytest.mark.parametrize("style", list(right))
    def test_right(style):
        feedback = check(right[style])
        assert_judged(feedback)
        assert feedback.status == CORRECT, feedback.message
        if style in remarks:
            assert remarks[style] in feedback.remark, feedback.remark
        else:
            assert feedback.remark == "", feedback.remark
        assert_gives_nothing_away(exercise, feedback, giveaways)

    @pytest.mark.parametrize("slip", list(wrong))
    def test_wrong(slip):
        answer, diagnosis = wrong[slip]
        feedback = check(answer)
        assert_judged(feedback)
        assert feedback.status == INCORRECT, feedback.message
        assert diagnosis in feedback.message, feedback.message
        assert len(feedback.message.split()) <= MOST_WORDS, feedback.message
        assert feedback.hint_text, f"no hint for: {feedback.message}"
        assert f"{check.__name__}.hint()" in repr(feedback)
        assert check.hint().text == feedback.hint_text  # the check remembers its last run
        assert_gives_nothing_away(exercise, feedback, giveaways)

    return test_right, test_wrong
