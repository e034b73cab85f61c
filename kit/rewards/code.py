"""Code rewards: does it parse, and does it pass its own row's tests (run in the sandbox)?

The dataset's `tests` column holds, per row, a list of test snippets (e.g. `assert add(2, 3) == 5`)
or one string of them, or a JSON list as a string. Each completion is run against its own row's
tests only, in a separate sandboxed process; completions run in parallel worker threads.
"""

from __future__ import annotations

import ast
import json
import os
from concurrent.futures import ThreadPoolExecutor

from kit.rewards.format import fenced_code
from kit.rewards.guard import row_optional
from kit.rewards.sandbox import run_python
from kit.rewards.text import completion_text


def extract_code(text: str) -> str:
    """The fenced code block when there is one, else the whole completion."""
    return fenced_code(text) or text


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


def row_tests(value) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                return [str(t) for t in json.loads(stripped)]
            except ValueError:
                pass
        return [stripped] if stripped else None
    tests = [str(t) for t in value]
    return tests or None


def passes_tests(timeout: float = 5.0, memory_mb: int = 512, workers: int | None = None):
    """Factory: the fraction of the row's tests the completion's code passes; None for rows without tests."""
    workers = workers or os.cpu_count() or 1

    def code_tests(completions, tests, **kwargs) -> list[float | None]:
        jobs = [(extract_code(completion_text(c)), row_tests(t)) for c, t in zip(completions, tests)]

        def score(job):
            code, cases = job
            if cases is None:
                return None
            return run_python(code, cases, timeout=timeout, memory_mb=memory_mb).fraction

        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(score, jobs))

    return row_optional(code_tests)  # a batch of rows without tests is normal in a mixed dataset
