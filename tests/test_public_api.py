"""helpers uses its dependencies' public API only: nothing named with a leading underscore
(matplotlib, ipywidgets, torch and the rest may change such names in any release)."""

import ast
from pathlib import Path

import helpers

HELPERS = Path(helpers.__file__).parent


def private_uses(source: str) -> list:
    """(line, what) for every private name of another module in ``source``: an import of
    one, or an attribute of anything but ``self`` or ``cls``. Dunders (``__name__``) are
    public."""
    def private(name):
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
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
    return found


def test_the_check_finds_private_names():
    source = ("from matplotlib.ft2font import RenderMode\n"
              "from matplotlib import _api\nimport torch._dynamo\n"
              "text._get_layout(renderer)\nself._cache = {}\nx.__class__\n")
    assert [what for _line, what in private_uses(source)] == [
        "from matplotlib import _api", "import torch._dynamo", "text._get_layout"]


def test_helpers_use_no_private_name_of_a_dependency():
    files = sorted(HELPERS.rglob("*.py"))
    assert len(files) > 10
    found = [f"{path.relative_to(HELPERS.parent)}:{line}: {what}"
             for path in files for line, what in private_uses(path.read_text(encoding="utf-8"))]
    assert found == [], "\n".join(found)
