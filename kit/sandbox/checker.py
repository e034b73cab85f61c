"""The checker: the sandbox's plain values against each test's check, in a limited process of its own (the
verdict on model-written code's tests; an LLM judge is kit/rewards/judge/).

The trainer never touches what the model's code returned: decoding a set of ten thousand numbers
with one hash, or `'%100000000d' % 2` in a check, would stall or bloat it. So a fresh
`python -I -S checker.py` (trusted code, untrusted data) reads the run's result lines and the checks
from stdin, under a CPU and memory limit, and writes for each run {"passed": [bool per test], "error":
str | None}. One checker serves a whole batch of runs, giving each at most RUN_CPU_SECONDS: a run whose
values cost more (a set of numbers that share one hash is quadratic to build) fails alone and the
batch goes on. When the checker itself fails, the kit checks the runs one by one.
Any failure of this process fails the tests; it can never pass one.
Stdlib only: kit/sandbox/split_tests.py imports the names the checks may use from here.
"""

import builtins
import json
import math
import os
import resource
import signal
import sys
import types

OUTSIDE_BUILTINS = {name: getattr(builtins, name) for name in (
    "abs", "all", "any", "bin", "bool", "bytes", "chr", "complex", "dict", "divmod", "enumerate", "float",
    "frozenset", "hex", "int", "isinstance", "len", "list", "map", "max", "min", "oct", "ord", "pow", "range",
    "repr", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "type", "zip", "True", "False", "None")}
OUTSIDE_MATH = ("ceil", "comb", "e", "exp", "fabs", "factorial", "floor", "gcd", "inf", "isclose", "isfinite",
                "isinf", "isnan", "log", "log10", "log2", "nan", "pi", "prod", "sqrt", "tau", "trunc")
OUTSIDE_NAMES = {**OUTSIDE_BUILTINS, "math": types.SimpleNamespace(**{n: getattr(math, n) for n in OUTSIDE_MATH})}
RUN_CPU_SECONDS, MEMORY_MB = 0.25, 1024


class TooSlow(BaseException):
    """Raised by the per-run timer; a BaseException, so no `except Exception` on the way swallows it."""


def too_slow(signum, frame):
    raise TooSlow


def decode(value):
    """The harness's tagged JSON back to Python values: tuples, sets, dicts and bytes keep their types."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value["type"]
    if kind == "bytes":
        return bytes.fromhex(value["hex"])
    items = [decode(v) for v in value["items"]]
    if kind == "dict":
        return {hashable(k): v for k, v in items}
    return {"tuple": tuple, "set": set, "frozenset": frozenset}[kind](hashable(v) for v in items)


def hashable(value):
    return tuple(hashable(v) for v in value) if isinstance(value, list) else value


def read_line(line: str):
    """A probe's value, or an Exception (its error, or an unreadable line): never a pass by accident."""
    try:
        answer = json.loads(line)
        return RuntimeError(str(answer["error"])) if "error" in answer else decode(answer["value"])
    except Exception as err:
        return ValueError(f"unreadable result: {err}")


def passes(check: str, values: list) -> bool:
    if any(isinstance(v, BaseException) for v in values):
        return False
    # the probes as globals: a generator expression or comprehension in the check cannot see eval's locals
    scope = {"__builtins__": OUTSIDE_NAMES, **{f"_probe{i}": v for i, v in enumerate(values)}}
    try:
        return bool(eval(check, scope))
    except Exception:
        return False


def check_within_budget(request: dict) -> dict:
    signal.setitimer(signal.ITIMER_PROF, RUN_CPU_SECONDS)  # CPU time, user and system: this run's alone
    try:
        return check_run(request)
    except TooSlow:
        return {"passed": [False] * len(request["checks"]),
                "error": f"its results took the checker more than {RUN_CPU_SECONDS} s to check"}
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def check_run(request: dict) -> dict:
    values = [read_line(line) for line in request["lines"]]
    values += [RuntimeError("no result")] * (sum(request["probe_counts"]) - len(values))
    passed, start = [], 0
    for check, count in zip(request["checks"], request["probe_counts"]):
        passed.append(passes(check, values[start:start + count]))
        start += count
    errors = [str(v) for v in values if isinstance(v, BaseException)]
    return {"passed": passed, "error": errors[0][:300] if errors else None}


def cpu_seconds(runs: int) -> int:
    """The whole checker's CPU limit: every run's budget, and a second to start and read its input."""
    return 1 + math.ceil(runs * RUN_CPU_SECONDS)


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import confine  # beside this file

    confine.set_dumpable(False)  # an unisolated run of the same user cannot rewrite the verdicts (confine.py)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_MB * 2**20, MEMORY_MB * 2**20))
    sys.setrecursionlimit(200)  # deep nesting fails fast instead of exhausting the C stack
    signal.signal(signal.SIGPROF, too_slow)
    runs = json.loads(sys.stdin.read())  # one item per run
    limit = cpu_seconds(len(runs))
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit))
    sys.stdout.write(json.dumps([check_within_budget(item) for item in runs]))


if __name__ == "__main__":
    main()
