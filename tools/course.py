"""The course's manifest, course.toml, read: its notebooks in order, with their explorers,
exercise checks and solutions.

    python -m tools.course     # prints the course as the manifest has it

Everything that lists notebooks, explorers or exercises goes through here: the tools, the
tests, the benchmarks and the package profiles. The manifest names; this module finds what
it names (``importlib``), so a name that does not exist fails where it is used, and
tests/test_course_manifest.py fails when a file exists that the manifest does not name.
"""

import importlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "course.toml"
NOTEBOOK_DIR = "notebooks"  # the notebooks' folder, relative to ROOT


@dataclass(frozen=True)
class Exercise:
    """One exercise: its notebook, the name the learner completes, its check, its solution."""

    notebook: str  # the notebook's name, without .ipynb
    answer: str  # the function or class the learner completes, as named in the notebook
    check_module: str  # helpers.checks.<check_module>
    check_name: str  # the check function's name there
    solution: str  # the solution's file name in solutions/<notebook>/

    @property
    def check(self):
        """The check function itself."""
        return getattr(importlib.import_module(f"helpers.checks.{self.check_module}"),
                       self.check_name)

    @property
    def solution_path(self) -> str:
        """The solution file, relative to the repository root."""
        return f"solutions/{self.notebook}/{self.solution}"

    @property
    def load_line(self) -> str:
        """What a learner types in a notebook (notebooks/ is the working directory)."""
        return f"%load ../{self.solution_path}"


@dataclass(frozen=True)
class Notebook:
    """One notebook of the course, as the manifest describes it."""

    name: str  # notebooks/<name>.ipynb
    summary: str  # what it teaches, in a line
    explorer: str  # "<module>.<factory>" in helpers.widgets
    checks: str  # helpers.checks.<checks>
    exercises: tuple  # of Exercise, in the notebook's order

    @property
    def path(self) -> str:
        """The notebook's file, relative to the repository root."""
        return f"{NOTEBOOK_DIR}/{self.name}.ipynb"

    @property
    def explorer_module(self) -> str:
        return self.explorer.split(".")[0]

    @property
    def explorer_name(self) -> str:
        return self.explorer.split(".")[1]

    def explorer_factory(self):
        """The explorer's factory function."""
        module = importlib.import_module(f"helpers.widgets.{self.explorer_module}")
        return getattr(module, self.explorer_name)


@cache
def notebooks() -> tuple:
    """Every notebook of the course, in order."""
    with open(MANIFEST, "rb") as file:
        entries = tomllib.load(file)["notebook"]
    return tuple(
        Notebook(entry["name"], entry["summary"], entry["explorer"], entry["checks"], tuple(
            Exercise(entry["name"], exercise["answer"], entry["checks"], exercise["check"],
                     exercise["solution"])
            for exercise in entry.get("exercises", [])))
        for entry in entries)


def notebook_paths() -> list:
    """The notebooks' files, relative to the repository root, in order."""
    return [notebook.path for notebook in notebooks()]


def exercises() -> tuple:
    """Every exercise of the course, in order."""
    return tuple(exercise for notebook in notebooks() for exercise in notebook.exercises)


def explorers() -> dict:
    """Every explorer's factory by its name, in course order."""
    return {notebook.explorer_name: notebook.explorer_factory() for notebook in notebooks()}


def main():
    for notebook in notebooks():
        print(f"{notebook.path}: explorer {notebook.explorer}, checks helpers.checks."
              f"{notebook.checks}")
        for exercise in notebook.exercises:
            print(f"    {exercise.answer}: {exercise.check_name}, {exercise.solution_path}")


if __name__ == "__main__":
    main()
