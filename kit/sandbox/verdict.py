"""Assert-style tests split in two: the calls into the model's code run in the sandbox, the verdict here.

`assert add(2, 3) == 5` becomes the probe `add(2, 3)`, evaluated in the sandbox to a plain value, and
the check `_probe0 == 5`, evaluated in this process on that value. The expected value never enters the
sandbox and the comparison never runs the model's code, so a rigged `__eq__`, a printed "all passed"
or an early `os._exit(0)` earn nothing. A probe is each outermost call (or bare name) that touches
something the test does not define itself; the rest of the test may use plain built-ins (len, sorted,
abs, math.isclose, ...). Tests the kit cannot split this way are refused with a message, not run.
"""

from __future__ import annotations

import ast
import builtins
import math
from dataclasses import dataclass

from kit.errors import KitError

OUTSIDE_BUILTINS = {name: getattr(builtins, name) for name in (
    "abs", "all", "any", "bool", "dict", "enumerate", "float", "frozenset", "int", "isinstance", "len", "list",
    "map", "max", "min", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "type", "zip",
    "True", "False", "None")}
OUTSIDE_NAMES = {**OUTSIDE_BUILTINS, "math": math}


class UnsupportedTest(KitError):
    pass


@dataclass(frozen=True)
class SplitTest:
    source: str
    probes: tuple[str, ...]  # expressions for the sandbox
    check: ast.Expression  # the verdict, over the names _probe0, _probe1, ...

    def passes(self, values: list) -> bool:
        """`values[i]` is probe i's plain value, or an Exception when it failed in the sandbox."""
        if any(isinstance(v, BaseException) for v in values):
            return False
        scope = {f"_probe{i}": v for i, v in enumerate(values)}
        try:
            return bool(eval(compile(self.check, "<test>", "eval"), {"__builtins__": OUTSIDE_NAMES}, scope))
        except Exception:
            return False


def split_test(source: str) -> SplitTest:
    """Split one test: an `assert <expression>` (a message after a comma is ignored) or a bare expression."""
    try:
        tree = ast.parse(source.strip())
    except SyntaxError as err:
        raise UnsupportedTest(f"the test {source!r} is not valid Python: {err.msg}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.Assert, ast.Expr)):
        raise UnsupportedTest(f"the test {source!r} is not one `assert` or expression; write one assert per test, "
                              "e.g. `assert add(2, 3) == 5`")
    statement = tree.body[0]
    expression = statement.test if isinstance(statement, ast.Assert) else statement.value
    probes: list[str] = []
    check = ProbeExtractor(probes, bound_names(expression)).visit(expression)
    leftover = sorted(outside_free_names(check) - set(OUTSIDE_NAMES) - {f"_probe{i}" for i in range(len(probes))})
    leftover += [probes[int(n.func.id[6:])] for n in ast.walk(check)  # a function cannot leave the sandbox
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id.startswith("_probe")]
    if leftover or not probes:
        raise UnsupportedTest(
            f"the test {source!r} cannot be checked outside the sandbox"
            + (f": {', '.join(leftover)} is used with names the test binds itself" if leftover else
               ": it does not call the solution")
            + "; write one assert per case, e.g. `assert f(2) == 4`")
    return SplitTest(source, tuple(probes), ast.fix_missing_locations(ast.Expression(check)))


class ProbeExtractor(ast.NodeTransformer):
    """Replace each outermost call or name that reaches the solution by `_probeN`; collect its source."""

    def __init__(self, probes: list[str], bound: set[str]):
        self.probes = probes
        self.bound = bound  # comprehension and lambda variables: they exist only in the test

    def generic_visit(self, node):
        if isinstance(node, (ast.Call, ast.Name, ast.Attribute, ast.Subscript)) and self.is_probe(node):
            self.probes.append(ast.unparse(node))
            return ast.Name(id=f"_probe{len(self.probes) - 1}", ctx=ast.Load())
        return super().generic_visit(node)

    visit_Call = visit_Name = visit_Attribute = visit_Subscript = generic_visit

    def is_probe(self, node) -> bool:
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if names & self.bound or not names - set(OUTSIDE_NAMES):
            return False
        return not (isinstance(node, ast.Call) and is_outside_function(node.func))


def is_outside_function(func) -> bool:
    """len, sorted, math.isclose, ...: run here, on the probes' plain values."""
    if isinstance(func, ast.Name):
        return func.id in OUTSIDE_BUILTINS
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math"


def bound_names(node) -> set[str]:
    stores = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return stores | {a.arg for n in ast.walk(node) if isinstance(n, ast.Lambda) for a in n.args.args}


def outside_free_names(node) -> set[str]:
    """Names the check reads that no comprehension or lambda inside it binds."""
    loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads - bound_names(node)
