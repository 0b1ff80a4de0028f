"""The course's code uses its dependencies' public API only: nothing named with a leading
underscore (matplotlib, ipywidgets, torch and the rest may change such names in any
release), whether written as an attribute, imported, or given as a string (getattr,
setattr, hasattr, delattr, vars()[...], .__dict__[...]).

Scanned: every Python file the course is made of (helpers, tools, benchmarks, tests,
solutions, the CI's profile checks and the scripts at the top). Our own modules' private
names are ours to use (tests import a check's cases). Keys of the widget model state
(``_dom_classes``, say) are data, not Python names: ipywidgets documents them in its model
state schema (packages/schema/jupyterwidgetmodels.*.md), and the state a widget sends
(``Widget.get_state``) or a notebook stores holds them.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["helpers", "tools", "benchmarks", "tests", "solutions", ".ci",
           "install_torch.py", "course_setup.py", "conftest.py"]
OWN = {"helpers", "tools", "tests", "benchmarks", "solutions"}
BY_NAME = {"getattr", "setattr", "hasattr", "delattr"}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str) -> list:
    """(line, what) for every private name of another package in ``source``: an import of
    one, an attribute of anything but ``self`` or ``cls``, or a string naming one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module.split(".")[0] in OWN:
                continue  # our own
            found += [(node.lineno, f"from {module} import {alias.name}")
                      for alias in node.names if private(alias.name)]
            if any(private(part) for part in module.split(".")):
                found.append((node.lineno, f"from {module}"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {alias.name}") for alias in node.names
                      if any(private(part) for part in alias.name.split("."))]
        elif isinstance(node, ast.Attribute) and private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append((node.lineno, f"{ast.unparse(owner)}.{node.attr}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in BY_NAME and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and private(node.args[1].value)):
            found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
              and isinstance(node.slice.value, str) and private(node.slice.value)
              and (isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                   and node.value.func.id == "vars"
                   or isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__")):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def scanned_files() -> list:
    files = []
    for name in SCANNED:
        path = ROOT / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def test_the_check_finds_private_names():
    source = ("from matplotlib.ft2font import RenderMode\n"
              "from matplotlib import _api\nimport torch._dynamo\n"
              "text._get_layout(renderer)\nself._cache = {}\nx.__class__\n"
              "getattr(figure, '_cachedRenderer')\nsetattr(x, 'value', 1)\n"
              "vars(module)['_private']\nlayer.__dict__['_x']\nstate['_dom_classes']\n"
              "from helpers.checks.padding import _mask_cases\nfrom .support import _stub\n")
    assert [what for _line, what in private_uses(source)] == [
        "from matplotlib import _api", "import torch._dynamo", "text._get_layout",
        "getattr(figure, '_cachedRenderer')", "vars(module)['_private']",
        "layer.__dict__['_x']"]


def test_every_part_of_the_course_is_scanned():
    """Every folder and script named exists, and every Python file of the repository outside
    the build and install folders is among those scanned."""
    assert all((ROOT / name).exists() for name in SCANNED)
    outside = {".venv", "build", "test-artifacts", "node_modules", ".git"}
    everywhere = {path for path in ROOT.rglob("*.py")
                  if not outside & set(path.relative_to(ROOT).parts)}
    assert everywhere - set(scanned_files()) == set()


def test_the_course_uses_no_private_name_of_a_dependency():
    found = [f"{path.relative_to(ROOT)}:{line}: {what}" for path in scanned_files()
             for line, what in private_uses(path.read_text(encoding="utf-8"))]
    assert found == [], "\n".join(found)
