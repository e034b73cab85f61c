"""A Python interpreter tool: the model's code runs in kit/sandbox, and what it printed is the tool's result.

    from kit.tools import python_tool
    TOOLS = [python_tool(timeout=5.0)]      # the model calls python(code="print(347 * 862)") and reads "299114"

Like a REPL, a last line that is an expression has its value printed ("347 * 862" alone gives "299114").
Whatever goes wrong (the code raises, runs past its deadline, prints too much) comes back as the result
text, so the model sees it and the run goes on. The code runs at the run's `code_isolation` level, checked
before training like a code reward's (kit.rewards.code.prepare_code_rewards); the tool's output is only
ever read by the model, never by a reward, so printing a fake result forges nothing.
"""

from __future__ import annotations

from kit.sandbox import run_program

# Runs inside the sandbox around the model's code: its exception, or its last expression's value, printed.
RUNNER = """
import ast
source = {code!r}
scope = {{"__name__": "__main__"}}
try:
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<python tool>", "exec"), scope)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), "<python tool>", "eval"), scope)
        if value is not None:
            print(repr(value))
except BaseException as error:
    print(f"{{type(error).__name__}}: {{error}}")
"""


def python_tool(timeout: float = 5.0, memory_mb: int = 256, max_chars: int = 1000, level: str | None = None):
    """The tool function `python(code)`, running each call in the sandbox with these limits; `level` None is
    the run's isolation level (code_isolation), as for code rewards."""

    def python(code: str) -> str:
        """Run Python code and return what it prints; the value of a last expression is printed too.

        Args:
            code: the Python source to run, e.g. "print(2 ** 10)"
        """
        outcome = run_program(RUNNER.format(code=code), timeout=timeout, memory_mb=memory_mb, level=level)
        text = outcome.stdout.decode(errors="replace").strip()
        if outcome.timed_out:
            printed = f"; it printed: {text[:max_chars]}" if text else ""
            return f"error: the code ran past its {timeout:g} s limit{printed}"
        if outcome.returncode not in (0, None) and not text:
            return f"error: the code was stopped (exit code {outcome.returncode})"
        if len(text) > max_chars:
            return text[:max_chars] + f"\n... ({len(text) - max_chars} more characters cut)"
        return text or "(no output: print the value you want to see)"

    python.runs_model_code = True  # kit.rewards.traits' mark: the run checks the sandbox before training
    return python
