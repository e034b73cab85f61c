"""Code rewards: does it parse, and does it pass its own row's tests (run in the sandbox, kit/sandbox)?

The dataset's `tests` column holds, per row, a list of tests, one string of them, or a JSON list as a
string. A test is either one assert (`assert add(2, 3) == 5`: the call runs in the sandbox, the
comparison here) or an {"input": ..., "output": ...} pair (the code runs as a program on that stdin;
its stdout, trailing spaces aside, must equal the output). Each completion is checked against its
own row's tests only, in a separate sandboxed process; completions run in parallel worker threads.
"""

from __future__ import annotations

import ast
import json
import os
from concurrent.futures import ThreadPoolExecutor

from kit.errors import KitError
from kit.rewards.format import fenced_code
from kit.rewards.text import completion_text
from kit.rewards.traits import trait, with_traits
from kit.sandbox import describe_active_level, run_program, split_test
from kit.sandbox.execute import check_runs, run_probes
from kit.sandbox.isolation import ENV_VAR


def extract_code(text: str) -> str:
    """The first fenced Python (or untagged) block when there is one, else the whole completion."""
    return fenced_code(text, "python") or text


def syntax_valid(completions, **kwargs) -> list[float]:
    """1.0 when the completion's code parses as Python."""
    scores = []
    for completion in completions:
        try:
            ast.parse(extract_code(completion_text(completion)))
            scores.append(1.0)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            scores.append(0.0)
    return scores


def row_tests(value) -> list | None:
    """The row's tests as a list of assert strings and {"input", "output"} dicts; None when it has none."""
    if value is None:
        return None
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                return row_tests(json.loads(stripped))
            except ValueError:
                pass
        return [stripped] if stripped else None
    if isinstance(value, dict):
        value = [value]
    tests = [t if isinstance(t, dict) else str(t) for t in value]
    return tests or None


def is_io_test(test) -> bool:
    return isinstance(test, dict)


def check_tests(value, row: int) -> None:
    """Refuse, before training, a test the sandbox cannot check without trusting the model's code."""
    for test in row_tests(value) or []:
        if is_io_test(test):
            if not {"input", "output"} <= set(test):
                raise KitError(f"data row {row}: a stdin/stdout test needs the keys 'input' and 'output'; got "
                               f"{sorted(test)}")
        else:
            try:
                split_test(test)
            except KitError as err:
                raise KitError(f"data row {row}, column 'tests': {err}") from None


def same_output(produced: str, expected: str) -> bool:
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip().splitlines()]

    return lines(produced) == lines(str(expected))


def io_passed(code: str, tests: list, timeout: float, memory_mb: int) -> int:
    """How many stdin/stdout tests the code passes, its output compared here."""
    passed = 0
    for test in filter(is_io_test, tests):
        outcome = run_program(code, str(test["input"]), timeout=timeout, memory_mb=memory_mb)
        good = not (outcome.timed_out or outcome.truncated) and outcome.returncode == 0
        passed += good and same_output(outcome.stdout.decode(errors="replace"), test["output"])
    return passed


def passes_tests(timeout: float = 5.0, memory_mb: int = 512, workers: int | None = None):
    """Factory: the fraction of the row's tests the completion's code passes; None for rows without tests."""
    workers = workers or os.cpu_count() or 1

    def code_tests(completions, tests, **kwargs) -> list[float | None]:
        per_row = [row_tests(t) for t in tests]
        jobs = [(extract_code(completion_text(c)), cases)
                for c, cases in zip(completions, per_row) if cases is not None]

        def run(job):
            code, cases = job
            asserts = [t for t in cases if not is_io_test(t)]
            probe_run = run_probes(code, asserts, timeout, memory_mb) if asserts else None
            return probe_run, io_passed(code, cases, timeout, memory_mb)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            runs = list(pool.map(run, jobs))
        verdicts = iter(check_runs([r for r, _ in runs if r is not None]))  # one checker for the whole batch
        passed = [(next(verdicts).passed if r is not None else 0) + io for r, io in runs]
        scores = iter([p / len(cases) for p, (_, cases) in zip(passed, jobs)])
        return [None if cases is None else next(scores) for cases in per_row]

    # the run checks the sandbox before training (prepare_code_rewards); a batch of rows without tests is normal
    # in a mixed dataset
    return with_traits(code_tests, runs_model_code=True, row_optional=True)


def prepare_code_rewards(isolation: str, reward_funcs, rows) -> str | None:
    """For rewards that run model code: pick the isolation level (or refuse) and check every row's tests.

    Returns the isolation level's description for the run's console, or None without such rewards.
    """
    if not any(runs_model_code(fn) for fn in reward_funcs):
        return None
    os.environ[ENV_VAR] = isolation  # read by the sandbox in this process and in launched ranks
    description = describe_active_level()
    for index, row in enumerate(rows):
        check_tests(row.get("tests"), index)
    return description


def runs_model_code(fn) -> bool:
    return trait(fn, "runs_model_code", False)
