"""The READMEs by reader: README.md for learners first (what the course is, the notebooks
and their times, help when stuck, the two commands), then lecturers and hub admins, short;
CONTRIBUTING.md for maintainers (how the install works and why, among the rest);
benchmarks/README.md for the figures. What they name (make targets, tools, files, figures)
exists."""

import re
from pathlib import Path

import pytest

from tools.course import notebook_paths

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
BENCHMARKS = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
DOCUMENTS = {"README.md": README, "CONTRIBUTING.md": CONTRIBUTING,
             "benchmarks/README.md": BENCHMARKS}
MAKE_TARGETS = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), flags=re.M))
NOTEBOOKS = [ROOT / path for path in notebook_paths()]
GENERATED = {"build", "test-artifacts", ".venv"}  # made by make, named as where output goes


def test_the_readme_is_short():
    size = len(README.encode("utf-8"))
    assert size <= 7600, f"README.md is {size} bytes: contributor detail goes to CONTRIBUTING.md"


def test_the_readme_says_first_what_the_course_is_and_for_whom():
    intro = README.split("\n## ")[0]
    for words in ("causal", "self-attention", "PyTorch", "notebooks", "For whom"):
        assert words in intro, f"the README's introduction does not say {words!r}"


def headings(text):
    return re.findall(r"^#{2,3} +(.+)$", text, flags=re.M)


def test_the_readme_is_in_reader_order():
    """Learners' sections first, then the lecturers', the hub admins' (the website's pages
    for lecturers and hub admins are cut from their sections: tools/site/pages.py), then the
    maintainers' pointer."""
    learners = ["The notebooks", "When you are stuck", "Two commands", "Without make",
                "Requirements", "Run it without installing anything"]
    assert headings(README)[:len(learners) + 3] == [*learners, "Teaching with it",
                                                    "For hub admins", "For maintainers"]


def test_the_readme_tells_a_stuck_learner_where_help_is():
    stuck = README.split("\n### When you are stuck\n")[1].split("\n## ")[0]
    for words in ("check cell", ".hint()", "%load", "lecturer", "issue"):
        assert words in stuck, f"'When you are stuck' does not say {words!r}"


def test_the_readme_says_how_long_things_take():
    readme = " ".join(README.split())
    assert re.search(r"make test` adds [\d.]+ GB and takes about \d+ minutes on \d+ cores",
                     readme), "the README does not say how long make test takes"
    assert re.search(r"optional parts [\d.]+ more", readme), (
        "the README does not say what the optional parts add")


def test_maintainer_detail_is_in_contributing_not_the_readme():
    for words in ("TORCH_INDEX_URL", "incompatible"):
        assert words not in README, f"the README says {words!r}: CONTRIBUTING.md's part"
    install = CONTRIBUTING.split("\n## The install\n")[1].split("\n## ")[0]
    for words in ("TORCH_INDEX_URL", "incompatible", "constraints.txt", "--allow-root"):
        assert words in install, f"CONTRIBUTING.md's 'The install' does not say {words!r}"


def test_the_readme_gives_the_two_commands_and_teaching_with_it():
    commands = re.findall(r"```bash\n(.*?)```", README, flags=re.S)[0]
    assert [line.split()[:2] for line in commands.splitlines()] == [["make", "lab"],
                                                                      ["make", "test"]]
    teaching = README.split("\n## Teaching with it\n")[1].split("\n## ")[0]
    for words in ("make slides", "make lecture", "Alt+R", "Full screen", "Speaker view"):
        assert words in teaching, f"'Teaching with it' does not say {words!r}"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_make_target_named_exists(name):
    named = set(re.findall(r"\bmake ([a-z][a-z-]*[a-z])\b", DOCUMENTS[name]))
    assert named - MAKE_TARGETS == set(), f"{name} names make targets the Makefile lacks"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_tool_named_exists(name):
    for module in re.findall(r"python -m tools\.(\w+)", DOCUMENTS[name]):
        assert (ROOT / "tools" / f"{module}.py").is_file(), f"{name} names tools.{module}"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_file_linked_or_named_exists(name):
    text, folder = DOCUMENTS[name], (ROOT / name).parent
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if not re.match(r"[a-z]+:", target):
            assert (folder / target).exists(), f"{name} links to {target}, which is missing"
    for path in re.findall(r"`([\w.-]+/[\w./-]*)`", text):  # paths from the repository root
        if path.split("/")[0] not in GENERATED and (ROOT / path.split("/")[0]).exists():
            assert (ROOT / path).exists(), f"{name} names {path}, which is missing"


def test_contributing_names_every_maintainer_tool():
    for path in sorted((ROOT / "tools").glob("*.py")):
        if path.stem != "__init__":
            assert f"`{path.stem}`" in CONTRIBUTING, (
                f"CONTRIBUTING.md does not name tools/{path.name}")


def test_the_readme_points_to_the_other_readers_documents_and_credits():
    for target in ("CONTRIBUTING.md", "benchmarks/README.md", "LICENSE"):
        assert f"]({target})" in README, f"the README does not link to {target}"
    readme = " ".join(README.split())  # wrapped lines or not
    licence = " ".join((ROOT / "LICENSE").read_text(encoding="utf-8").split())
    for credit in ("Raschka", "Build a Large Language Model (From Scratch)", "Manning, 2024"):
        assert credit in readme, f"the README's credits do not name {credit!r}"
        assert credit in licence, f"LICENSE's credit does not name {credit!r}"


def test_the_readme_quotes_its_figures_from_the_benchmarks():
    # A size before "zip" is the course zip's, checked by tests/tools/test_course_zip.py.
    figures = re.findall(r"\b\d+ MB\b(?!\s+zip)|\b\d+ to \d+ learners per core\b", README)
    assert figures, "the README gives hub admins no sizing"
    for figure in figures:
        assert figure.replace(" learners per core", "") in BENCHMARKS, (
            f"the README says {figure!r}, which benchmarks/README.md does not")
