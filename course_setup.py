"""Makes the course's notebooks runnable wherever they are opened.

The first code cell of every notebook puts this folder (the course's root) on the import
path, fetching the course first when a notebook was opened on its own (on Colab), and
calls ``ready()``. That is all a notebook needs, whether the course was installed
(``make lab``, Binder) or not (a JupyterHub clone through nbgitpuller, a downloaded zip):

- ``helpers`` is imported from this folder when it is not installed;
- on Colab, the working folder becomes the course's ``notebooks/`` (the exercises load
  solutions from ``../solutions``); Colab's own packages are used as they are;
- a package the course needs that is missing, or older than the course supports, is
  named with the version found and the one command that fixes it, instead of an error
  deep inside a lesson.

Standard library only: it runs before anything else is known to be there.
"""

import os
import re
import sys
from importlib import metadata
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parent

# What the notebooks import, with the oldest versions the course runs on (the same lower
# bounds as pyproject.toml's dependencies; a test keeps them equal).
REQUIREMENTS = {
    "torch": "2.5",
    "numpy": "1.26.4",
    "matplotlib": "3.8",
    "pillow": "10",
    "ipywidgets": "7.7.1",
    "ipykernel": "6.17.1",
}


class SetupError(Exception):
    """What stops a notebook from running here, and what to do about it."""


def ready(*, on_colab=None) -> None:
    """Make ``helpers`` importable and check the packages; on Colab, work in the course's
    notebooks folder. Prints one line saying where the course comes from. Raises
    ``SetupError`` with the fix when a package is missing or too old."""
    if on_colab is None:
        on_colab = "google.colab" in sys.modules
    problems = package_problems()
    if problems:
        raise SetupError("\n".join(problems))
    installed = helpers_installed()
    if not installed and str(COURSE_ROOT) not in sys.path:
        sys.path.insert(0, str(COURSE_ROOT))
    if on_colab:
        os.chdir(COURSE_ROOT / "notebooks")
    print(f"Course ready: helpers {'installed' if installed else 'from ' + str(COURSE_ROOT)}.")


def helpers_installed() -> bool:
    """Whether ``helpers`` is importable without this folder on the path (installed with
    pip, e.g. by ``make lab`` or on Binder)."""
    try:
        metadata.distribution("causal-attention-course")
    except metadata.PackageNotFoundError:
        return False
    return True


def package_problems(requirements=None, *, in_notebook: bool = True) -> list:
    """One sentence per required package that is missing or older than required: what
    was found, what is needed, and the command that fixes it."""
    run = "%pip install" if in_notebook else "python -m pip install"
    restart = " (then restart the kernel)" if in_notebook else ""
    problems = []
    for name, lowest in (requirements or REQUIREMENTS).items():
        fix = f'{run} "{name}>={lowest}"{restart}'
        if name == "torch":  # a CPU build is enough, and much smaller
            fix = (f'{run} "torch>={lowest}" --index-url https://download.pytorch.org/whl/cpu'
                   f"{restart}")
        try:
            found = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name} is not installed; the course needs {name} >= {lowest}. "
                            f"Fix: {fix}")
            continue
        if release(found) < release(lowest):
            problems.append(f"{name} {found} is installed; the course needs {name} >= "
                            f"{lowest}. Fix: {fix}")
    return problems


def release(version: str) -> tuple:
    """The numeric release of a version string: '2.13.0+cpu' -> (2, 13, 0), '3.8' ->
    (3, 8, 0), '2.0.0rc1' -> (2, 0, 0). Enough to compare with a lower bound."""
    numbers = re.match(r"\d+(\.\d+)*", version).group(0).split(".")[:3]
    return tuple(int(part) for part in numbers) + (0,) * (3 - len(numbers))
