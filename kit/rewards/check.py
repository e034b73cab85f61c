"""`python -m kit rewards check RECIPE [--completions FILE]`: try a reward bundle before training.

Runs every reward on sample completions (the recipe's SAMPLE_COMPLETIONS, or a JSONL file of
{"completion": ..., <dataset columns>...}) and prints each function x each sample and the weighted
total, then warns about what would spoil training: a function that gives every sample the same value
(no learning signal), a function that raised, a value outside the function's documented range.

It takes a bundle and samples, not a recipe, so any RewardBundle can be tried (kit.recipe builds on
kit.rewards, not the other way round):

    samples = load_samples(path_or_None, recipe.sample_completions, recipe.name)
    print_report(run_bundle(recipe.rewards, samples), samples)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import KitError
from kit.rewards.bundle import Reward, RewardBundle
from kit.rewards.traits import trait, unwrapped

KIT_RANGE = (0.0, 1.0)  # every kit reward documents [0, 1]


@dataclass
class RewardRun:
    reward: Reward
    values: list[float | None] | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)


def load_samples(path: str | None, shipped: list[dict], recipe_name: str) -> list[dict]:
    """The completions file at `path`, or without one the samples a recipe ships (its SAMPLE_COMPLETIONS)."""
    if path is None:
        if not shipped:
            raise KitError(f"recipe '{recipe_name}' ships no SAMPLE_COMPLETIONS; pass --completions FILE.jsonl")
        return list(shipped)
    file = Path(path)
    if not file.is_file():
        raise KitError(f"completions file {file} does not exist")
    samples = []
    for number, line in enumerate(file.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            raise KitError(f"{file}, line {number}: not JSON ({err})") from None
        if not isinstance(row, dict) or "completion" not in row:
            raise KitError(f"{file}, line {number}: each line needs a \"completion\" key, plus the dataset columns")
        samples.append(row)
    if not samples:
        raise KitError(f"completions file {file} holds no samples")
    return samples


NOT_COLUMNS = ("completion", "transcript", "label", "step", "rewards")  # samples.jsonl's own keys, not columns


def run_bundle(bundle: RewardBundle, samples: list[dict], toolbox=None) -> list[RewardRun]:
    """Every reward on every sample. A sample's completion is its text or its messages (samples.jsonl keeps a
    tool-using one's whole transcript); with an environment (a kit.tools.Toolbox's), each sample's tool calls
    are replayed on a fresh one, which rewards get as `environments`, and its get_reward() is a row too."""
    completions = [s.get("transcript", s["completion"]) for s in samples]
    columns = {key: [s.get(key) for s in samples] for s in samples for key in s if key not in NOT_COLUMNS}
    rewards = list(bundle.rewards)
    if toolbox is not None and toolbox.environment is not None:
        rows = [{k: v[i] for k, v in columns.items()} for i in range(len(samples))]
        columns["environments"] = [toolbox.replay(row, c) for row, c in zip(rows, completions)]
        if toolbox.rewarded_by_environment:
            rewards.append(Reward(environment_reward(toolbox.reward_name), 1.0))
    runs = [run_one(reward, completions, columns) for reward in rewards]
    for run in runs:
        run.warnings += training_mismatch(run, samples)
    return runs


def environment_reward(name: str):
    """An environment's get_reward() as a reward function, under the name TRL gives it."""
    def reward(completions, environments, **kwargs) -> list[float]:
        return [e.get_reward() for e in environments]

    reward.__name__ = name
    return reward


def training_mismatch(run: RewardRun, samples: list[dict]) -> list[str]:
    """Samples from a run's samples.jsonl carry the value each reward gave during training; they must agree."""
    pairs = [(s["rewards"][run.reward.name], v) for s, v in zip(samples, run.values or [])
             if isinstance(s.get("rewards"), dict) and run.reward.name in s["rewards"]]
    differ = [(then, now) for then, now in pairs if _missing(then) != _missing(now) or
              (not _missing(then) and then != now)]
    if not differ:
        return []
    then, now = differ[0]
    return [(f"gave {len(differ)} of {len(pairs)} samples another value than during training (first: {then} then, "
             f"{now} now): the reward is not deterministic, or its code or the data changed since")]


def run_one(reward: Reward, completions: list, columns: dict) -> RewardRun:
    run = RewardRun(reward)
    try:
        values = reward.fn(completions=completions, prompts=[None] * len(completions), **columns)
    except Exception as err:  # noqa: BLE001 - the point of the check: report it instead of dying mid-training
        run.error = f"{type(err).__name__}: {err}"
        run.warnings.append(f"raised {run.error}")
        return run
    run.values = list(values)
    run.warnings += value_warnings(reward, run.values, len(completions))
    return run


def _missing(value) -> bool:
    """None from a reward is NaN in TRL's records: both mean "does not apply"."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def value_warnings(reward: Reward, values: list, expected: int) -> list[str]:
    if len(values) != expected:
        return [f"returned {len(values)} values for {expected} completions"]
    warnings = []
    numbers = [v for v in values if v is not None]
    bad = [v for v in numbers if not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad:
        warnings.append(f"returned non-numbers or NaN/inf: {bad[:3]}")
    low, high = documented_range(reward.fn)
    if low is not None:
        outside = [v for v in numbers if v not in bad and not low <= v <= high]
        if outside:
            warnings.append(f"values outside its documented range [{low:g}, {high:g}]: {outside[:3]}")
    if len(numbers) > 1 and len(set(numbers)) == 1:
        warnings.append(f"gives every sample {numbers[0]:g}: no learning signal (GRPO learns from differences)")
    if not numbers:
        warnings.append("returned None for every sample: it never applies to these rows")
    return warnings


def documented_range(fn) -> tuple[float | None, float | None]:
    """Its reward_range; a kit reward without one gives 0..1; a user's says nothing."""
    kit_reward = unwrapped(fn).__module__.startswith("kit.rewards")
    return trait(fn, "reward_range", KIT_RANGE if kit_reward else (None, None))


def weighted_totals(runs: list[RewardRun], count: int) -> list[float]:
    totals = [0.0] * count
    for run in runs:
        for i, value in enumerate(run.values or []):
            if isinstance(value, (int, float)) and math.isfinite(value):
                totals[i] += run.reward.weight * value
    return totals


def print_report(runs: list[RewardRun], samples: list[dict]) -> None:
    names = [f"{r.reward.name} x{r.reward.weight:g}" for r in runs]
    labels = [str(s.get("label") or _preview(s["completion"])) for s in samples]
    width = max(len(label) for label in labels + ["sample"])
    cells = [max(len(n), 6) for n in names]
    print(f"{'sample':{width}}  " + "  ".join(f"{n:>{c}}" for n, c in zip(names, cells)) + "   total")
    totals = weighted_totals(runs, len(samples))
    for i, label in enumerate(labels):
        row = [_cell(run, i) for run in runs]
        print(f"{label:{width}}  " + "  ".join(f"{v:>{c}}" for v, c in zip(row, cells)) + f"  {totals[i]:6.2f}")
    warnings = [(run.reward.name, w) for run in runs for w in run.warnings]
    print()
    for name, warning in warnings:
        print(f"warning: {name}: {warning}")
    if not warnings:
        print("no warnings: every reward ran, stayed in range and tells the samples apart")


def _cell(run: RewardRun, index: int) -> str:
    if run.error:
        return "ERROR"
    value = run.values[index] if run.values and index < len(run.values) else None
    return "-" if value is None else f"{value:.3g}" if isinstance(value, (int, float)) else "?"


def _preview(completion) -> str:
    from kit.rewards.text import completion_text

    text = " ".join(completion_text(completion).split())
    return text[:28] + ("..." if len(text) > 28 else "")
