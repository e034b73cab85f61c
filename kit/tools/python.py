"""A Python interpreter tool: the model's code runs in kit/sandbox, and what it printed is the tool's result.

    from kit.tools import python_tool
    TOOLS = [python_tool(timeout=5.0)]      # the model calls python(code="print(347 * 862)") and reads "299114"

Like a REPL, a last line that is an expression has its value printed ("347 * 862" alone gives "299114").
Whatever goes wrong comes back as the result text, so the model sees it and the run goes on; a run that did not
finish says so first, "error: ...", whatever the code printed before (kept after "; it printed: "):

    299114                                                  finished, and this is what it printed
    (no output: print the value you want to see)            finished, printed nothing
    error: ZeroDivisionError: division by zero              the code raised (a SystemExit other than 0 too)
    error: the code ran past its 5 s limit; it printed: 1   stopped at the deadline
    error: the code printed more than 1048576 bytes         stopped at the sandbox's output cap
    error: the code was stopped (exit code 1)               killed (memory, CPU time) or it ended itself so

A reward reads only how the result starts (finished_and_printed; the python_tool recipe's tool_ran): the code
prints whatever it likes, so printed text earns nothing by looking like a result, and text that looks like a
failure (or like no output) counts as one. Whether the run finished is the runner's exit status, which the
code's own tricks (sys.exit or os._exit replaced, an atexit hook, a stdout whose flush exits) do not change: the
runner keeps its own os._exit and os.write from before the code runs. Code that rewrites the runner's frame
could still pass a failure off as a finish, but that code is a working program that ran: what the reward pays
for anyway.

The code runs at the run's `code_isolation` level, checked before training like a code reward's
(kit.rewards.code.prepare_code_rewards).
"""

from __future__ import annotations

from kit.sandbox import run_program
from kit.sandbox.execute import OUTPUT_LIMIT
from kit.tools.stats import ERROR_PREFIX

FAILED = "error: "  # how the result of a run that did not finish starts
NO_OUTPUT = "(no output: print the value you want to see)"
RAISED = 70  # RUNNER's exit status when the code raised (EX_SOFTWARE); the code's own os._exit(n) is "stopped"

# Runs inside the sandbox around the model's code: its last expression's value printed, or its exception written
# after what it printed, then the exit status RAISED. stdout writes through, so a failure has nothing to flush.
RUNNER = """
import ast, io, os, sys
_write, _exit = os.write, os._exit
sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                              write_through=True)
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
    if not (isinstance(error, SystemExit) and error.code in (None, 0)):  # exit() ends a script that finished
        try:
            message = f"{{type(error).__name__}}: {{error}}"
        except BaseException:  # the code's exception may not say what it is
            message = type(error).__name__
        try:
            _write(1, ("\\n" + " ".join(message.split())).encode("utf-8", "backslashreplace"))
        finally:
            _exit(70)  # RAISED
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
            return failure(f"the code ran past its {timeout:g} s limit", text, max_chars)
        if outcome.truncated:
            return failure(f"the code printed more than {OUTPUT_LIMIT} bytes", text, max_chars)
        if outcome.returncode == RAISED:
            printed, _, raised = text.rpartition("\n")  # the runner writes the exception last, on its own line
            return failure(raised or "the code raised", printed.strip(), max_chars)
        if outcome.returncode != 0:
            return failure(f"the code was stopped (exit code {outcome.returncode})", text, max_chars)
        if len(text) > max_chars:
            return text[:max_chars] + f"\n... ({len(text) - max_chars} more characters cut)"
        return text or NO_OUTPUT

    python.runs_model_code = True  # kit.rewards.traits' mark: the run checks the sandbox before training
    return python


def failure(what: str, printed: str, max_chars: int) -> str:
    return FAILED + what[:max_chars] + (f"; it printed: {printed[:max_chars]}" if printed else "")


def finished_and_printed(result) -> bool:
    """True when `result` is python()'s for a run that finished within its limits and printed something; False
    for a failure (the tool's, or TRL's `{'error': ...}` for a call that could not run), for no output, and for
    anything else that is not text."""
    return (isinstance(result, str) and bool(result.strip()) and result != NO_OUTPUT
            and not result.startswith((FAILED, ERROR_PREFIX)))
