"""helpers holds what learners use: every module under helpers/ is imported by a notebook,
a solution or another helpers module (test plumbing and dead code live elsewhere)."""

import ast
from pathlib import Path

import nbformat

from tools.course import ROOT, notebook_paths

HELPERS = ROOT / "helpers"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str) -> set:
    """Every module an import in ``source`` names: ``import a.b``, ``from a.b import c``
    (a.b, and a.b.c in case c is a module). Lines of IPython magics are left out."""
    code = "\n".join(line for line in source.splitlines()
                     if not line.lstrip().startswith(("%", "!")))
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def importers() -> dict:
    """{where: the modules it imports} for the notebooks, the solutions and helpers."""
    found = {}
    for path in notebook_paths():
        notebook = nbformat.read(ROOT / path, as_version=4)
        found[str(path)] = set().union(*(imported(cell.source) for cell in notebook.cells
                                         if cell.cell_type == "code"))
    for path in [*sorted((ROOT / "solutions").rglob("*.py")), *sorted(HELPERS.rglob("*.py"))]:
        found[str(path.relative_to(ROOT))] = imported(path.read_text(encoding="utf-8"))
    return found


def unused_modules(modules: list, found: dict) -> list:
    """The modules no other file imports; a package counts as used when a module in it is."""
    used = set()
    for where, names in found.items():
        used |= {name for name in names if name != module_name(ROOT / where)
                 or not where.endswith(".py")}
    return [module for module in modules
            if not any(name == module or name.startswith(module + ".") for name in used)]


def test_the_check_finds_a_module_nobody_imports():
    found = {"notebooks/01.ipynb": {"helpers.data"}, "helpers/a/b.py": {"helpers.a.c"},
             "helpers/a/d.py": {"helpers.a.d"}}
    assert unused_modules(["helpers.data", "helpers.a", "helpers.a.c", "helpers.a.d"],
                          found) == ["helpers.a.d"]


def test_every_helpers_module_is_imported_by_a_notebook_a_solution_or_helpers():
    modules = sorted(module_name(path) for path in HELPERS.rglob("*.py"))
    assert unused_modules(modules, importers()) == []
