"""Every import of the kit's and the benchmarks' own names resolves: `from kit… import name`, `from bench… import
name` and `import kit.x.y`, in kit/ and bench/, inside functions too.

Many of them sit in functions that only a GPU runs (bench.gpu_check's workers, the vLLM paths), so a renamed
function would otherwise fail first on a user's GPU. Importing the modules named is enough: their own imports
run, and the names they are asked for are looked up; nothing is called.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

OWN_PACKAGES = ("kit", "bench")


def own(module: str) -> bool:
    return module.split(".")[0] in OWN_PACKAGES


def package_of(path: Path) -> str:
    """The package a file's relative imports start from: kit/a/b.py and kit/a/__init__.py are both in kit.a."""
    return ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])


def relative_module(node: ast.ImportFrom, path: Path) -> str:
    return importlib.util.resolve_name("." * node.level + (node.module or ""), package_of(path))


def imports_in(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name) for each of the file's imports of its own packages; name None for `import kit.x.y`."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):  # every node: imports in functions too
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name, None) for alias in node.names if own(alias.name))
        elif isinstance(node, ast.ImportFrom):
            module = node.module if not node.level else relative_module(node, path)
            if own(module):
                yield from ((node.lineno, module, alias.name) for alias in node.names if alias.name != "*")


def unresolved(module: str, name: str | None) -> str | None:
    """Why `from module import name` (or `import module`) would fail; None when it resolves."""
    try:
        imported = importlib.import_module(module)
    except ImportError as err:
        return f"cannot import {module}: {err}"
    if name is None or hasattr(imported, name):
        return None
    if hasattr(imported, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None:
        return None  # a submodule, not yet imported
    return f"{module} has no {name}"


def own_sources() -> list[Path]:
    return sorted(p for package in OWN_PACKAGES for p in (REPO / package).rglob("*.py"))


@pytest.mark.gpu_route
def test_every_import_of_the_kits_own_names_resolves():
    problems = [f"{path.relative_to(REPO)}:{line}: {why}"
                for path in own_sources()
                for line, module, name in imports_in(path)
                if (why := unresolved(module, name))]
    assert not problems, "imports that fail where they run:\n" + "\n".join(problems)


def test_the_walk_finds_imports_inside_functions(tmp_path):
    """The walk itself: a function's import is found, and a name a module lacks is reported."""
    source = tmp_path / "sample.py"
    source.write_text("import os\n\ndef work():\n    from kit.errors import KitError, no_such_name\n"
                      "    import kit.models.names\n")
    found = list(imports_in(source))
    assert found == [(4, "kit.errors", "KitError"), (4, "kit.errors", "no_such_name"), (5, "kit.models.names", None)]
    assert [unresolved(module, name) for _, module, name in found] == [None, "kit.errors has no no_such_name", None]
