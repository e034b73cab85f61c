"""Scoring throughput: completions per second for the math and code bundles on 1,000 completions.

    .venv/bin/python bench/reward_throughput.py [--n 1000] [--skip-code] [--recipes-only]

The recipe table runs each shipped recipe's whole bundle on its own SAMPLE_COMPLETIONS (right, wrong and
malformed replies, with their rows' columns), cycled to --n completions (a fifth of that for code, whose
every completion runs in the sandbox), the caches (math-verify's parses, compiled JSON schemas) cleared before
each cycle, so each cycle costs what a batch of new rows would. Its baseline is the gsm8k bundle on its samples,
measured in the same run.

The correctness table times answer_correct, which judges the whole <answer> (kit/rewards/whole_answer.py),
against the rule it replaced, the last number of the tag (reproduced below as `last_number_correct`), on
the same completions: plain numbers only (what a trained model mostly writes), then a mix in which 40%
are hedges ('18 or 20') or fractions ('3/4', '\\frac{3}{4}'), the ones math-verify has to read.

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

from kit.checks.rewards_check import NOT_COLUMNS
from kit.recipes import load_recipe
from kit.rewards import answer_correct, canonical_number, completion_text, extract_tag
from kit.rewards.code import passes_tests
from kit.rewards.format import _validator
from kit.rewards.presets import PRESETS
from kit.rewards.whole_answer import _evaluate
from kit.sandbox.execute import level_works
from kit.sandbox.isolation import ENV_VAR, LEVELS


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


def tagged_batch(n: int, rng: random.Random, mixed: bool) -> tuple[list, dict]:
    """<answer> tags: right and wrong plain numbers; with `mixed`, 40% hedges and fractions as well."""
    completions, answers = [], []
    for _ in range(n):
        gold = rng.randint(1, 2000)
        given = gold if rng.random() < 0.5 else gold + rng.randint(1, 9)
        plain = [f"{given:,}", f"${given}.00", f"{given} apples"]
        other = [f"{rng.randint(1, 99)} or {given}", f"{given * 4}/4", f"\\frac{{{given * 3}}}{{3}}"]
        text = rng.choice(other) if mixed and rng.random() < 0.4 else rng.choice(plain)
        content = f"<reasoning>\n...\n</reasoning>\n<answer>\n{text}\n</answer>"
        completions.append([{"role": "assistant", "content": content}])
        answers.append(str(gold))
    return completions, {"answer": answers}


def last_number_correct(completions, answer, **kwargs) -> list[float]:
    """answer_correct before issue 19: the tag's last number against the gold's last number."""
    return [float(canonical_number(extract_tag(completion_text(c), "answer")) == canonical_number(gold))
            for c, gold in zip(completions, answer)]


def correctness_throughput(n: int, rng: random.Random) -> None:
    for label, mixed in (("plain numbers", False), ("40% hedges and fractions", True)):
        completions, columns = tagged_batch(n, rng, mixed)
        answer_correct(completions[:50], answer=columns["answer"][:50])  # imports math-verify and sympy once
        _evaluate.cache_clear()  # every expression read afresh, as in a batch of new completions
        new, old = rate([answer_correct], completions, columns), rate([last_number_correct], completions, columns)
        print(f"{'answer_correct, ' + label:40s} {new:8.0f} completions/s  (last number: {old:.0f}/s; "
              f"{new / old:.2f}x)")


def code_batch(n: int, rng: random.Random) -> tuple[list, dict]:
    right = "```python\ndef add(a, b):\n    return a + b\n```"
    wrong = "```python\ndef add(a, b):\n    return a - b\n```"
    completions = [[{"role": "assistant", "content": right if rng.random() < 0.5 else wrong}] for _ in range(n)]
    tests = [["assert add(1, 2) == 3", f"assert add({i}, 0) == {i}"] for i in range(n)]
    return completions, {"tests": tests}


RECIPES = ("gsm8k", "json_extract", "csv_qa", "math_think", "code")


def recipe_throughput(n: int) -> None:
    """Each recipe's bundle on its own samples; the ratio is to the gsm8k bundle's rate in this run."""
    rates = {}
    for name in RECIPES:
        recipe = load_recipe(name)
        samples = recipe.sample_completions
        total = n // 5 if name == "code" else n
        cycles = max(1, total // len(samples))
        completions = [s["completion"] for s in samples]
        columns = {key: [s.get(key) for s in samples] for s in samples for key in s if key not in NOT_COLUMNS}
        recipe.rewards.funcs[0](completions=completions, **columns)  # imports math-verify / starts the sandbox once
        elapsed = 0.0
        for _ in range(cycles):
            _evaluate.cache_clear()  # each cycle is read afresh, as a batch of new completions would be
            _validator.cache_clear()
            elapsed += timed(recipe.rewards.funcs, completions, columns)
        rates[name] = cycles * len(samples) / elapsed
        print(f"{f'recipe {name}':28s} {rates[name]:8.0f} completions/s  ({cycles * len(samples)} completions, "
              f"{len(recipe.rewards.funcs)} rewards; {rates[name] / rates['gsm8k']:.3f}x gsm8k)")


def timed(bundle, completions, columns) -> float:
    started = time.perf_counter()
    for reward in bundle:
        reward(completions=completions, prompts=[None] * len(completions), **columns)
    return time.perf_counter() - started


def rate(bundle, completions, columns) -> float:
    started = time.perf_counter()
    for reward in bundle:
        reward(completions=completions, **columns)
    return len(completions) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--skip-code", action="store_true", help="only the math bundles and correctness")
    parser.add_argument("--recipes-only", action="store_true", help="only the table of each recipe's bundle")
    args = parser.parse_args()
    recipe_throughput(args.n)
    if args.recipes_only:
        return
    rng = random.Random(0)
    correctness_throughput(args.n, rng)
    completions, columns = math_batch(args.n, rng)
    for name, bundle in (("gsm8k bundle", load_recipe("gsm8k").rewards), ("math preset", PRESETS["math"]())):
        print(f"{name:28s} {rate(bundle.funcs, completions, columns):8.0f} completions/s  ({args.n} completions)")
    if args.skip_code:
        return
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
