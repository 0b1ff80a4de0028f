"""Makes the course's notebooks runnable wherever they are opened.

The first code cell of every notebook puts this folder (the course's root) on the import
path and calls ``ready()``. Opened on its own (on Colab), a notebook first fetches the
course from its public address or, while it has none, finds a copy of the course on
Colab or asks for its zip (see ``colab_setup_source`` in tools/links.py). That is all a
notebook needs, whether the course was installed (``make lab``, Binder) or not (a
JupyterHub clone through nbgitpuller, the course's zip):

- ``helpers`` is imported from this folder, installed or not (a copy installed
  elsewhere could be older than these notebooks);
- on Colab, the working folder becomes the course's ``notebooks/`` (the exercises load
  solutions from ``../solutions``); Colab's own packages are used as they are;
- a package the course needs that is missing, or older than the course supports, is
  named with the version found and the one command that fixes it, instead of an error
  deep inside a lesson;
- in a Jupyter kernel, a cell that ends with a matplotlib Figure shows it as a picture
  (``show_figures_inline``).

Standard library only: it runs before anything else is known to be there.
"""

import importlib.util
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
    """Put this folder first on the import path (its helpers are the ones these notebooks
    were written for, even where a copy of the course is also installed), check the
    packages, on Colab work in the course's notebooks folder, and show figures inline.
    Prints one line saying where ``helpers`` comes from. Raises ``SetupError`` with the
    fix when a package is missing or too old, or when ``helpers`` is not in this folder."""
    if on_colab is None:
        on_colab = "google.colab" in sys.modules
    problems = package_problems()
    if problems:
        raise SetupError("\n".join(problems))
    if str(COURSE_ROOT) in sys.path:
        sys.path.remove(str(COURSE_ROOT))
    sys.path.insert(0, str(COURSE_ROOT))
    if on_colab:
        os.chdir(COURSE_ROOT / "notebooks")
    show_figures_inline()
    found = helpers_folder()
    if found is None:
        raise SetupError(f"The course's helpers are not in {COURSE_ROOT}: this notebook needs "
                         "the whole course folder. Download all of it and open the notebook "
                         "from its notebooks folder.")
    if found.resolve() == (COURSE_ROOT / "helpers").resolve():
        print("Course ready: helpers from this course's folder.")
    else:
        print(f"Course ready, but helpers comes from {found}, not from this course's folder "
              f"{COURSE_ROOT}: restart the kernel (Kernel > Restart) and run this cell first.")


def show_figures_inline() -> None:
    """In a Jupyter kernel, turn on matplotlib's inline display (``%matplotlib inline``),
    so that a cell ending with a Figure shows it as a picture. pyplot turns it on when it
    makes its first figure; the helpers make theirs without pyplot, so without this such a
    cell would show only the text ``<Figure size ... with N Axes>``. Each picture also
    carries a description of what it shows (``helpers.plotting.figure_description``) in
    its output's metadata, the alt text of the exported slides and of any page made from
    the notebook. Outside a kernel (plain Python, a test run) it does nothing."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and hasattr(shell, "kernel"):  # Jupyter's and Colab's shells
        shell.run_line_magic("matplotlib", "inline")
        describe_figures(shell.display_formatter.formatters["image/png"])


def describe_figures(png_formatter) -> None:
    """Make ``png_formatter`` (IPython's formatter of PNG pictures) return, with each
    Figure's PNG, the metadata ``{"alt": <what the figure shows>}``."""
    from matplotlib.figure import Figure

    draw = png_formatter.lookup_by_type(Figure)

    def png_with_description(figure):
        from helpers.plotting import figure_description

        png = draw(figure)
        if isinstance(png, tuple):  # set up twice (the setup cell run again): already ours
            png = png[0]
        return png if png is None else (png, {"alt": figure_description(figure)})

    png_formatter.for_type(Figure, png_with_description)


def helpers_folder():
    """The folder ``import helpers`` takes the course's helpers from (the one already
    imported, if any), or None when there is none."""
    try:
        spec = importlib.util.find_spec("helpers")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


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
