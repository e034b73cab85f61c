"""The package's shape, checked from its source: no import cycles between packages or between files (imports
inside functions and writers named in strings count), layers (imports for type checkers count too), short modules
(bench/ too), and one place (kit/outputs.py) that spells the output folder's file names."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KIT = REPO / "kit"
MAX_LINES = 400  # a smoke alarm, not a target: split by concern (docs/layout.md)
# What a run writes into OUT/; kit/outputs.py alone names them (other folders it reads come from it too).
OUTPUT_FILES = ("run.yaml", "metrics.jsonl", "eval.json", "samples.jsonl", "diagnostics.jsonl", "report.md",
                "distributed.json", "run.png", "metrics.png", ".run.lock", "verification.json")
OUTPUT_FOLDERS = ("adapter", "merged", "checkpoints", "checkpoints-sft", "gguf", "plots")


def kit_modules() -> list[Path]:
    """Every module of the kit, the shipped recipes included (recipes/, linked as kit/recipes)."""
    return sorted(Path(root) / name for root, _, names in os.walk(KIT, followlinks=True) for name in names
                  if name.endswith(".py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(KIT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(module: str) -> str:
    """The node of the package graph: kit.train.stages.sft -> kit.train; kit.config -> kit.config."""
    return ".".join(module.split(".")[:2])


def runtime_nodes(tree: ast.AST):
    """Every node, leaving out the blocks under `if TYPE_CHECKING:` (imports for type checkers only)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in [child, *runtime_nodes(child)])
            continue
        yield node
        yield from runtime_nodes(node)


def imported_modules(path: Path, type_checking: bool = False) -> set[str]:
    """Every kit module this file imports at run time, at the top or inside a function (`from kit.a import b`:
    kit.a.b when that is a module, else kit.a); with type_checking, those under `if TYPE_CHECKING:` too."""
    found = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree) if type_checking else runtime_nodes(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("kit")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                name = module_name(path)
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            if base == "kit" or base.startswith("kit."):
                found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES or base == "kit" else base
                          for alias in node.names}
    return found


MODULES = {module_name(path) for path in kit_modules()}
# Modules imported by name in a string, and the module that imports them: kit/config/formats.py names each save
# format's writer ("kit.export.merged:write_adapter") and kit.export.save imports it (importlib).
NAMED_FUNCTION = re.compile(r"^(kit(?:\.\w+)+):(\w+)$")
NAMED_IMPORTER = "kit.export.save"


def named_functions() -> list[tuple[str, str, str]]:
    """(the module naming it, module, function) for each "kit.module:function" string in kit/."""
    found = []
    for path in kit_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAMED_FUNCTION.match(node.value):
                module, function = node.value.split(":")
                found.append((module_name(path), module, function))
    return found


def module_graph() -> dict[str, set[str]]:
    """File to file: every import, at the top or inside a function, and the writers imported by name. Imports for
    type checkers are left out here (not in package_graph): kit/config/rules.py and stages.py name RunConfig in
    their signatures, and RunConfig's validator calls them, so schema.py imports them and they import it back for
    the type checker alone. Ending that would mean one config module of three concerns past the size limit, or
    signatures that no longer say what they take."""
    graph = {module_name(path): imported_modules(path) & MODULES - {module_name(path)} for path in kit_modules()}
    graph[NAMED_IMPORTER] |= {module for _, module, _ in named_functions()}
    return graph


def package_graph() -> dict[str, set[str]]:
    """Package to package: every import, imports for type checkers included (a type-only import up the layers is
    a dependency too)."""
    graph: dict[str, set[str]] = {}
    for path in kit_modules():
        source = unit(module_name(path))
        targets = {unit(m) for m in imported_modules(path, type_checking=True)} - {source, "kit"}
        graph.setdefault(source, set()).update(targets)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_package_imports_another_in_a_cycle():
    assert cycles(package_graph()) == []


def test_no_module_imports_another_in_a_cycle():
    """Not even at run time: an import inside a function that closes a circle counts."""
    assert cycles(module_graph()) == []


def test_the_module_graph_sees_imports_inside_functions_and_of_submodules(tmp_path):
    """The circle that used to be there: isolation.py imported execute.py inside a function."""
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nfrom kit.sandbox import execute\n\n"
                      "if TYPE_CHECKING:\n    from kit.config.schema import RunConfig\n\n"
                      "def f():\n    from kit.sandbox.isolation import HERE\n")
    assert imported_modules(module) == {"kit.sandbox.execute", "kit.sandbox.isolation"}
    assert imported_modules(module, type_checking=True) == {"kit.sandbox.execute", "kit.sandbox.isolation",
                                                            "kit.config.schema"}
    assert cycles({"kit.sandbox.isolation": {"kit.sandbox.execute"}, "kit.sandbox.execute": {"kit.sandbox.isolation"}})


def test_every_named_writer_exists_and_is_imported_from_below():
    named = named_functions()
    assert {module for _, module, _ in named} >= {"kit.export.merged", "kit.export.gguf.export", "kit.export.hub"}
    for where, module, function in named:
        path = KIT.parent / (module.replace(".", "/") + ".py")
        defined = {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}
        assert function in defined, f"{where} names {module}:{function}, which does not exist"
        assert unit(module) == unit(NAMED_IMPORTER), f"{where} names {module}, outside {unit(NAMED_IMPORTER)}"


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"kit.a": {"kit.b"}, "kit.b": {"kit.c"}, "kit.c": {"kit.a"}, "kit.d": {"kit.a"}}) == [
        ["kit.a", "kit.b", "kit.c"]]
    assert cycles({"kit.a": {"kit.b"}, "kit.b": set()}) == []


@pytest.mark.parametrize("path", kit_modules() + sorted((REPO / "bench").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_module_is_short(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES


def spelled_output_names(path: Path) -> list[str]:
    """String literals naming an output file, or an output folder joined with `/`, outside docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += [name for name in OUTPUT_FILES if name in node.value]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            right = node.right
            if isinstance(right, ast.Constant) and right.value in OUTPUT_FOLDERS:
                found.append(right.value)
    return found


@pytest.mark.parametrize("path", [p for p in kit_modules() if p.name != "outputs.py" or p.parent != KIT],
                         ids=lambda p: str(p.relative_to(KIT)))
def test_output_names_are_spelled_only_in_kit_outputs(path):
    assert spelled_output_names(path) == []


def test_the_output_name_check_sees_a_spelled_name(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Writes OUT/run.yaml."""\nP = out / "merged"\nQ = str(out) + "/metrics.jsonl"\n')
    assert spelled_output_names(module) == ["merged", "metrics.jsonl"]


# kit/ from what everything shares to the commands (docs/layout.md): each imports only what is above it.
LAYERS = ["kit.errors", "kit.verbosity", "kit.user_code", "kit.env", "kit.cpu_threads", "kit.compile_cache",
          "kit.cache", "kit.hub", "kit.ranks", "kit.outputs", "kit.atomic", "kit.diskspace", "kit.digest", "kit.config",
          "kit.sandbox", "kit.tools", "kit.rewards", "kit.recipe", "kit.checks", "kit.models", "kit.data",
          "kit.recipes", "kit.plan", "kit.eval", "kit.monitor", "kit.export", "kit.train", "kit.doctor", "kit.cli",
          "kit.__main__"]


def test_each_package_imports_only_the_ones_above_it():
    graph = package_graph()
    assert sorted(graph) == sorted(LAYERS + ["kit"]), "a new package: give it its place in LAYERS and docs/layout.md"
    upward = {(node, target) for node, targets in graph.items() if node in LAYERS for target in targets
              if target in LAYERS and LAYERS.index(target) >= LAYERS.index(node)}
    assert upward == set()


def test_the_shipped_recipes_are_a_layer_of_the_kit(tmp_path):
    """Inside the kit's namespace: `pip install -e .` adds one top-level package, kit, and no `recipes`, which
    would collide with torchtune's or a user's own recipes/ folder."""
    find = re.search(r"\[tool\.setuptools\.packages\.find\]\ninclude = (.*)\n", (REPO / "pyproject.toml").read_text())
    assert find.group(1) == '["kit*"]'
    probe = "import importlib.util; print(importlib.util.find_spec('recipes'))"
    elsewhere = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                               timeout=60)  # outside the repository
    assert elsewhere.stdout.strip() == "None", elsewhere.stderr
    assert (KIT / "recipes").resolve() == REPO / "recipes"
    shipped = {m for m in MODULES if m.startswith("kit.recipes.")}
    assert {"kit.recipes.gsm8k", "kit.recipes.digit_sum", "kit.recipes.code"} <= shipped
    assert all(unit(m) in LAYERS for module in shipped for m in module_graph()[module])
