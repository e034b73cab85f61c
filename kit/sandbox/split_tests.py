"""Assert-style tests split in two: the calls into the model's code run in the sandbox, the verdict outside.

`assert add(2, 3) == 5` becomes the probe `add(2, 3)`, evaluated in the sandbox to a plain value, and
the check `_probe0 == 5`, evaluated by the checker (kit/sandbox/checker.py, a limited process of its own)
on that value. The expected value never enters the sandbox and the comparison never runs the model's
code, so a rigged `__eq__`, a printed "all passed" or an early `os._exit(0)` earn nothing.

A probe is each outermost call (or bare name) that reaches the solution, stopped short of what can be
applied to a plain value: a subscript, or a method or attribute that a built-in type has
(`greet('Bob').startswith('Hi')`, `add(2, 3).__eq__(5)`, `f(1)[0]`). Those run in the checker on the
probe's plain value, so a returned object with a rigged `startswith` earns nothing. Methods no
built-in type has (`Stack().push(1)`), and any method of an object the test builds by a CapWords
name (`LRUCache(2).get(1)`), are the solution's own and run in the sandbox. Everything else in the test
must be something the checker knows (plain built-ins such as len, sorted, pow, chr; math.isclose, ...):
a test that calls two names the kit does not know (`isclose(solve(3), x)`, `solve(3) == EXPECTED`)
is refused, since the model's code could define the second and so compute the expected side itself.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kit.errors import KitError
from kit.sandbox.checker import OUTSIDE_MATH, OUTSIDE_NAMES

BUILTIN_ATTRIBUTES = frozenset(name for kind in (bool, int, float, complex, str, bytes, list, tuple, dict, set,
                                                 frozenset, type(None)) for name in dir(kind))
ONE_ASSERT = "write one assert per case, e.g. `assert f(2) == 4`"


class UnsupportedTest(KitError):
    pass


@dataclass(frozen=True)
class SplitTest:
    source: str
    probes: tuple[str, ...]  # expressions for the sandbox
    check: str  # the verdict for the checker, over the names _probe0, _probe1, ...


def split_test(source: str) -> SplitTest:
    """Split one test: an `assert <expression>` (a message after a comma is ignored) or a bare expression."""
    expression = parse_one_expression(source)
    bound = bound_names(expression)
    unknown = sorted(root_names(expression) - set(OUTSIDE_NAMES) - bound)
    if len(unknown) > 1:
        raise UnsupportedTest(
            f"the test {source!r} calls {' and '.join(unknown)}, which the kit cannot tell apart from the solution: "
            "only the solution's own name may be unknown to it (built-ins and math.* are fine)")
    unknown_math = [n.attr for n in ast.walk(expression) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name) and n.value.id == "math" and n.attr not in OUTSIDE_MATH]
    if unknown_math:
        raise UnsupportedTest(f"the test {source!r} uses math.{unknown_math[0]}; the checks may use "
                              f"math.{', math.'.join(OUTSIDE_MATH)}")
    probes: list[str] = []
    check = ProbeExtractor(probes, bound).visit(expression)
    leftover = sorted(outside_free_names(check) - set(OUTSIDE_NAMES) - {f"_probe{i}" for i in range(len(probes))})
    leftover += [probes[int(n.func.id[6:])] for n in ast.walk(check)  # a function cannot leave the sandbox
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id.startswith("_probe")]
    if leftover:
        raise UnsupportedTest(f"the test {source!r} cannot be checked outside the sandbox: {', '.join(leftover)} is "
                              f"used with names the test binds itself; {ONE_ASSERT}")
    if not probes:
        raise UnsupportedTest(f"the test {source!r} does not call the solution; {ONE_ASSERT}")
    return SplitTest(source, tuple(probes), ast.unparse(ast.fix_missing_locations(check)))


def parse_one_expression(source: str) -> ast.expr:
    try:
        tree = ast.parse(source.strip())
    except SyntaxError as err:
        raise UnsupportedTest(f"the test {source!r} is not valid Python: {err.msg}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.Assert, ast.Expr)):
        raise UnsupportedTest(f"the test {source!r} is not one `assert` or expression; {ONE_ASSERT}")
    statement = tree.body[0]
    return statement.test if isinstance(statement, ast.Assert) else statement.value


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
        if isinstance(node, ast.Call) and is_outside_function(node.func):
            return False
        return not any(runs_in_checker(link) for link in links(node))


def links(node):
    """The operations applied to the solution's value, outermost first, down to a bare name or a call of one."""
    while True:
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name):
            yield node
            node = node.func.value if isinstance(node.func, ast.Attribute) else node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            yield node
            node = node.value
        else:
            return


def runs_in_checker(link) -> bool:
    """A subscript, or an attribute (or method call) a built-in type has, unless it is on a CapWords-built object."""
    if isinstance(link, ast.Call) and isinstance(link.func, ast.Attribute):
        link = link.func
    if isinstance(link, ast.Subscript):
        return True
    return isinstance(link, ast.Attribute) and link.attr in BUILTIN_ATTRIBUTES and not builds_a_class(link.value)


def builds_a_class(node) -> bool:
    """`Cache` or `Cache(2)`: by the convention the test was written in, an object of the solution's own class."""
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Name) and node.id[:1].isupper() and node.id != node.id.upper()


def is_outside_function(func) -> bool:
    """len, sorted, str.upper, math.isclose, ...: the checker runs these, on the probes' plain values.

    Rooted at a name the checker knows, they run outside, where the model's code cannot redefine them."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id in OUTSIDE_NAMES


def root_names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def bound_names(node) -> set[str]:
    stores = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return stores | {a.arg for n in ast.walk(node) if isinstance(n, ast.Lambda) for a in n.args.args}


def outside_free_names(node) -> set[str]:
    """Names the check reads that no comprehension or lambda inside it binds."""
    return root_names(node) - bound_names(node)
