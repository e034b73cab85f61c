"""`python -m kit rewards check RECIPE [--completions FILE]`: try a reward bundle before training.

Runs every reward on sample completions (the recipe's SAMPLE_COMPLETIONS, or a JSONL file of
{"completion": ..., <dataset columns>...} such as a run's OUT/samples.jsonl) and prints each function x each
sample and the weighted total. Then it says
- what training would refuse, in the words of kit.rewards.guard, which stops a run on it: a reward that raises,
  returns the wrong count or something other than numbers and None, returns None for every sample (unless
  row_optional), or cannot run on the empty completions training tries first. The command then exits 1;
- what would spoil training: a function that gives every sample the same value (no learning signal), NaN or
  inf, a value outside the function's documented range, a penalty whose negative weight undoes its sign;
- the samples each reward returned None for: legal ("does not apply to this row"), but worth knowing.

Rewards are called as training calls them, with chat messages: a completion written as text is passed as
[{"role": "assistant", "content": text}], a sample's prompt text as [{"role": "user", "content": text}].

It takes a bundle and samples, not a recipe, so any RewardBundle can be tried:
`print_report(run_bundle(recipe.rewards, samples), samples)`. An LLM judge's raw replies are printed too.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from kit.checks.empty_completions import try_on_empty
from kit.errors import KitError
from kit.rewards.bundle import Reward, RewardBundle
from kit.rewards.guard import CheckedReward, finite_or_none, is_row_optional
from kit.rewards.judge.reward import judgement_lines
from kit.rewards.text import as_messages, completion_text
from kit.rewards.traits import documented_range, unwrapped
from kit.rewards.trl_call import TRL_ARGUMENTS, trl_kwargs
from kit.tools.reply_guard import safe_text


@dataclass
class RewardRun:
    reward: Reward
    values: list[float | None] | None = None  # None: it broke the reward contract on the samples
    refusals: list[str] = field(default_factory=list)  # what training would stop on, in the guard's words
    warnings: list[str] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # the samples it returned None for ("does not apply")
    judgements: list = field(default_factory=list)  # an LLM judge's: each sample's raw reply (kit.rewards.judge)


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


SAMPLE_KEYS = ("prompt", "completion", "transcript", "label", "step", "rewards")  # a sample's own, as samples.jsonl's
NOT_COLUMNS = TRL_ARGUMENTS + SAMPLE_KEYS  # a sample's keys that are not dataset columns
TRIAL_ROWS = 2  # training tries each reward on empty completions of its first two rows


def run_bundle(bundle: RewardBundle, samples: list[dict], toolbox=None) -> list[RewardRun]:
    """Every reward on every sample, as training calls it, and on empty completions as training tries it first.
    A sample's completion is its text or its messages (a tool-using one's whole transcript; earlier runs'
    samples.jsonl kept that under "transcript"); with an environment (a kit.tools.Toolbox's), each sample's tool
    calls are replayed on a fresh one, which rewards get as `environments`, and its get_reward() is a row too."""
    completions = [as_messages(s.get("transcript", s["completion"]), "assistant") for s in samples]
    columns = {key: [s.get(key) for s in samples] for s in samples for key in s if key not in NOT_COLUMNS}
    prompts = [as_messages(s.get("prompt"), "user") for s in samples]
    rewards, environments, replayed = list(bundle.rewards), None, None
    if toolbox is not None and toolbox.environment is not None:
        rows = [dataset_row(sample, columns, prompt) for sample, prompt in zip(samples, prompts)]
        environments = [toolbox.replay(row, c) for row, c in zip(rows, completions)]
        replayed = [toolbox.replay(row, []) for row in rows[:TRIAL_ROWS]]
        if toolbox.rewarded_by_environment:
            rewards.append(Reward(environment_reward(toolbox.reward_name), 1.0))
    kwargs = trl_kwargs(prompts, columns, environments=environments)  # no tokenizer here: no completion_ids
    trial = trl_kwargs(prompts[:TRIAL_ROWS], {key: values[:TRIAL_ROWS] for key, values in columns.items()},
                       environments=replayed)
    runs = [run_one(reward, completions, kwargs) for reward in rewards]
    for run in runs[:len(bundle.rewards)]:  # TRL's environment reward is not the recipe's to try
        tried = empty_trial(run.reward, min(TRIAL_ROWS, len(samples)), trial)
        run.refusals += [refusal for refusal in tried if refusal not in run.refusals]  # a wrong count, said once
    for run in runs:
        run.warnings += training_mismatch(run, samples)
    return runs


def dataset_row(sample: dict, columns: dict, prompt) -> dict:
    """A sample's row as an environment's reset(**row) gets it in training: its columns and its prompt."""
    row = {key: sample.get(key) for key in columns}
    return row if sample.get("prompt") is None else {"prompt": prompt, **row}


def empty_trial(reward: Reward, count: int, kwargs: dict) -> list[str]:
    """What training's first call, on empty completions, would stop on (kit.checks.empty_completions)."""
    try:
        try_on_empty(reward.fn, count, kwargs)
    except KitError as err:
        return [str(err)]
    return []


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


def run_one(reward: Reward, completions: list, kwargs: dict) -> RewardRun:
    """One reward on the samples (`kwargs`: trl_kwargs for them), through the guard training uses: its refusals are
    the run's refusals."""
    run = RewardRun(reward)
    checked = CheckedReward(reward.fn)
    try:
        run.values = checked.call(completions, kwargs)
        run.judgements = list(getattr(unwrapped(reward.fn), "last", []))  # read before the empty trial's call
        checked.require_some_row(finite_or_none(run.values))
    except KitError as err:  # the point of the check: say it now instead of stopping training
        run.refusals.append(str(err))
    if run.values is not None:
        run.warnings += value_warnings(reward, run.values)
        run.missing = [i for i, value in enumerate(run.values) if value is None]
    return run


def _missing(value) -> bool:
    """None from a reward is NaN in TRL's records: both mean "does not apply"."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def value_warnings(reward: Reward, values: list[float | None]) -> list[str]:
    """What would spoil training without stopping it; `values` have passed the guard (numbers or None)."""
    warnings = []
    numbers = [v for v in values if v is not None]
    bad = [v for v in numbers if not math.isfinite(v)]
    if bad:
        warnings.append(f"returned NaN or inf for {len(bad)} of {len(values)} samples: training counts them as "
                        "None (does not apply) and the health monitor warns; return a number, or None")
    low, high = documented_range(reward.fn)
    if low is not None:
        outside = [v for v in numbers if v not in bad and not low <= v <= high]
        if outside:
            warnings.append(f"values outside its documented range [{low:g}, {high:g}]: {outside[:3]}")
    if high is not None and high <= 0 and reward.weight < 0:
        warnings.append(f"its values are at most 0 (a penalty already) and its weight is {reward.weight:g}: TRL "
                        "adds weight x value, so it pays for what it penalizes; give it a positive weight")
    if len(numbers) > 1 and len(set(numbers)) == 1:
        warnings.append(f"gives every sample {numbers[0]:g}: no learning signal (GRPO learns from differences)")
    if not numbers and is_row_optional(reward.fn):  # otherwise the guard refuses it
        warnings.append("returned None for every sample: it never applies to these rows")
    return warnings


def weighted_totals(runs: list[RewardRun], count: int) -> list[float]:
    totals = [0.0] * count
    for run in runs:
        for i, value in enumerate(run.values or []):
            if isinstance(value, (int, float)) and math.isfinite(value):
                totals[i] += run.reward.weight * value
    return totals


def print_report(runs: list[RewardRun], samples: list[dict]) -> None:
    names = [f"{r.reward.name} x{r.reward.weight:g}" for r in runs]
    labels = [sample_label(s) for s in samples]
    width = max(len(label) for label in labels + ["sample"])
    cells = [max(len(n), 6) for n in names]
    print(f"{'sample':{width}}  " + "  ".join(f"{n:>{c}}" for n, c in zip(names, cells)) + "   total")
    totals = weighted_totals(runs, len(samples))
    for i, label in enumerate(labels):
        row = [_cell(run, i) for run in runs]
        print(f"{label:{width}}  " + "  ".join(f"{v:>{c}}" for v, c in zip(row, cells)) + f"  {totals[i]:6.2f}")
    refusals = [refusal for run in runs for refusal in run.refusals]
    warnings = [(run.reward.name, w) for run in runs for w in run.warnings]
    print()
    for refusal in refusals:
        print(f"error: {refusal}")
    for name, warning in warnings:
        print(f"warning: {name}: {warning}")
    for run in runs:
        if run.missing and len(run.missing) < len(samples):  # None for all: warned or refused above
            rows = ", ".join(f"{i + 1} {labels[i]!r}" for i in run.missing)
            print(f"note: {run.reward.name}: returned None (does not apply) for {len(run.missing)} of {len(samples)} "
                  f"samples: {rows}")
    for run in runs:  # an LLM judge's raw replies, to debug its rubric by
        if run.judgements:
            print("\n".join(judgement_lines(run.reward.name, run.judgements, labels)))
    if refusals:
        print(f"training would stop on {'this error' if len(refusals) == 1 else 'these errors'}: fix the reward, "
              "then check again")
    elif not warnings:
        print("no warnings: every reward ran, stayed in range and tells the samples apart")


def sample_label(sample: dict) -> str:
    """A sample's label, or its text's start; printable (JSON may carry a lone surrogate, which print refuses)."""
    return safe_text(str(sample.get("label") or _preview(sample.get("transcript", sample["completion"]))))


def _cell(run: RewardRun, index: int) -> str:
    if run.values is None:
        return "ERROR"
    value = run.values[index]
    return "-" if value is None else f"{value:.3g}"


def _preview(completion) -> str:
    text = " ".join(completion_text(completion).split())
    return text[:28] + ("..." if len(text) > 28 else "")
