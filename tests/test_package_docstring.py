"""The package docstring (helpers/__init__.py) lists what the package holds: every module,
one bullet per top-level module or subpackage, with the subpackage's modules named in its
bullet (except the one-per-notebook modules of helpers.widgets and helpers.checks, which
course.toml names: tests/test_course_manifest.py); and it names nothing that is not there."""

import ast
import re
from pathlib import Path

from tools.course import notebooks

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "helpers"


def docstring_bullets() -> dict:
    """{top-level name: the text of its bullet} from the ``- ``helpers.X``: ...`` lines."""
    text = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")))
    bullets, current = {}, None
    for line in text.splitlines():
        start = re.match(r"- ``helpers\.(\w+)``", line)
        if start:
            current = start.group(1)
            bullets[current] = line
        elif current and line.startswith("  "):
            bullets[current] += " " + line.strip()
        else:
            current = None
    return bullets


def modules() -> dict:
    """{top-level name: the dotted names of its modules below it (empty for a module)}."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if "__pycache__" in parts or parts == ("__init__",):
            continue
        found.setdefault(parts[0], [])
        below = [part for part in parts[1:] if part != "__init__"]
        if below:
            found[parts[0]].append(".".join(below))
    return found


def test_the_package_holds_modules_and_subpackages():
    found = modules()
    assert any(not below for below in found.values()), "no top-level module found"
    assert any(below for below in found.values()), "no subpackage with modules found"


def per_notebook_modules() -> set:
    """helpers.<package>.<module> of each notebook's explorer and checks, as course.toml
    names them."""
    return ({f"widgets.{notebook.explorer_module}" for notebook in notebooks()}
            | {f"checks.{notebook.checks}" for notebook in notebooks()})


def test_every_module_of_the_package_is_named_in_its_docstring():
    bullets = docstring_bullets()
    for name, below in modules().items():
        assert name in bullets, f"helpers/__init__.py's docstring has no bullet for helpers.{name}"
        for module in below:
            if f"{name}.{module}" in per_notebook_modules():
                continue
            assert f"``{module}``" in bullets[name], (
                f"the docstring's bullet for helpers.{name} does not name its module {module}")


def test_the_docstring_names_only_what_is_there():
    found = modules()
    for name, bullet in docstring_bullets().items():
        assert name in found, f"the docstring lists helpers.{name}, which does not exist"
        if found[name]:  # a subpackage: each lower-case ``name`` in its bullet is a module
            for module in re.findall(r"``([a-z_]+)``", bullet):
                assert module in found[name], (
                    f"the bullet for helpers.{name} names {module}, which is not one of its "
                    f"modules {found[name]}")
