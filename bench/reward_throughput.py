"""Scoring throughput: completions per second for the math and code bundles on 1,000 completions.

    .venv/bin/python bench/reward_throughput.py [--n 1000]

Scoring must never be the slow part of a GRPO step. For the code bundle (one sandboxed process per
completion) the baseline is the same bundle with a single worker, measured in the same run; the
ratio is the speed-up of the parallel workers. The isolation table times one worker under each
sandbox level this machine offers against `unisolated` (seccomp and rlimits only), in the same run:
the ratio is what the operating system's isolation costs.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from kit.recipe import load_recipe
from kit.rewards.code import passes_tests
from kit.rewards.presets import PRESETS
from kit.sandbox.isolation import ENV_VAR, LEVELS, level_works


def math_batch(n: int, rng: random.Random) -> tuple[list, dict]:
    completions, answers = [], []
    for _ in range(n):
        a, b = rng.randint(1, 999), rng.randint(1, 999)
        given = a + b if rng.random() < 0.5 else a + b + rng.randint(1, 9)
        style = rng.randrange(3)
        text = (f"<reasoning>\n{a} + {b} = {given}\n</reasoning>\n<answer>\n{given:,}\n</answer>\n" if style == 0 else
                f"First {a} plus {b}, therefore \\boxed{{{given}}}" if style == 1 else f"The answer is {given}.")
        completions.append([{"role": "assistant", "content": text}])
        answers.append(str(a + b))
    return completions, {"answer": answers}


def code_batch(n: int, rng: random.Random) -> tuple[list, dict]:
    right = "```python\ndef add(a, b):\n    return a + b\n```"
    wrong = "```python\ndef add(a, b):\n    return a - b\n```"
    completions = [[{"role": "assistant", "content": right if rng.random() < 0.5 else wrong}] for _ in range(n)]
    tests = [["assert add(1, 2) == 3", f"assert add({i}, 0) == {i}"] for i in range(n)]
    return completions, {"tests": tests}


def rate(bundle, completions, columns) -> float:
    started = time.perf_counter()
    for reward in bundle:
        reward(completions=completions, **columns)
    return len(completions) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(0)
    completions, columns = math_batch(args.n, rng)
    for name, bundle in (("gsm8k bundle", load_recipe("gsm8k").rewards), ("math preset", PRESETS["math"]())):
        print(f"{name:28s} {rate(bundle.funcs, completions, columns):8.0f} completions/s  ({args.n} completions)")
    completions, columns = code_batch(args.n, rng)
    workers = os.cpu_count() or 1
    serial = rate([passes_tests(workers=1)], completions, columns)
    parallel = rate(PRESETS["code"]().funcs, completions, columns)
    print(f"{'code preset, 1 worker':28s} {serial:8.0f} completions/s  (baseline)")
    print(f"{f'code preset, {workers} workers':28s} {parallel:8.0f} completions/s  "
          f"({parallel / serial:.2f}x the baseline)")
    isolation_costs(completions[:200], {"tests": columns["tests"][:200]})


def isolation_costs(completions, columns) -> None:
    """One worker under each level that works here; the baseline is `unisolated`, measured in this run."""
    rates = {}
    for level in ("unisolated", *[lv for lv in LEVELS if lv != "unisolated"]):
        if level_works(level) is None:
            os.environ[ENV_VAR] = level
            rates[level] = rate([passes_tests(workers=1)], completions, columns)
    baseline = rates["unisolated"]
    for level, value in rates.items():
        note = "baseline" if level == "unisolated" else f"{value / baseline:.2f}x the baseline"
        print(f"{f'sandbox {level}, 1 worker':28s} {value:8.0f} completions/s  ({note}; {1000 / value:.0f} ms each)")


if __name__ == "__main__":
    main()
