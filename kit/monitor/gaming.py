"""Signs that GRPO is gaming its rewards instead of learning the task, said in words while it trains.

    watch = GamingWatch(recipe, rewards, dataset, tokenizer)
    watch.observe(step, logs, batch, held_out) -> [(code, message), ...]   # HealthCallback prints them once

GRPO pays whatever the rewards pay: this kit's own runs were paid for `<answer>481*263</answer>` as a correct
sum, and for the format without an answer. Three signs, each cheap enough to look for at every logged step:
- `gaming:<reward>`: a reward rose between held-out checks (eval.every_steps) while held-out strict stayed flat
  or fell, and completions of the latest batch that the reward paid are refused by the recipe's strict judge
  (its EVAL). The message names the reward and the scores, and quotes two of those completions.
- `collapsed`: most groups of a batch answer with one string, whatever their prompt: paid without reading it.
- `facts_dropped`: the completions GRPO reinforces (advantage above 0) stop mentioning any number or name
  of their prompt (in the recipe's FACT_COLUMNS): answers from memory, not from the question. Only a drop
  counts: a policy that never wrote working (a model still learning the format) is not alarmed.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass
from statistics import fmean

from kit.data.row_pictures import image_column, row_key
from kit.monitor.facts import fact_columns, mentions, row_facts
from kit.outputs import RunDir
from kit.rewards.text import completion_text

RISE = 0.1  # a reward rose: by a tenth of its documented range (of 0..1 when not documented)
WINDOW_STEPS = 50  # compare held-out checks up to this many steps apart (at least the last two)
COLLAPSE_SHARE, COLLAPSE_STEPS = 0.5, 3  # half the groups on one string, three batches running
# over 5 batches, 10+ reinforced completions: under a quarter mention a fact, where once half or more did
FACT_STEPS, FACT_MIN, FACT_DROP, FACT_SHARE = 5, 10, 0.25, 0.5
EXAMPLES, JUDGED = 2, 16  # completions quoted; candidates the strict judge reads at most
SAMPLES = RunDir("OUT").samples  # where the messages send the user to read what was paid


@dataclass
class Batch:
    """The latest generation batch, as TRL keeps it for logging (trainer._logs), one entry per completion."""

    prompts: list
    completions: list
    rewards: dict[str, list[float]]  # by reward name
    advantages: list[float]

    @classmethod
    def from_trainer_logs(cls, logs: dict) -> Batch:
        rewards = {name: list(values) for name, values in logs["rewards"].items()}
        return cls(list(logs["prompt"]), list(logs["completion"]), rewards, list(logs["advantages"]))

    def fingerprint(self) -> int:
        return hash(repr((self.prompts, self.completions)))


class GamingWatch:
    def __init__(self, recipe, rewards, dataset, tokenizer, ranges: dict | None = None):
        self.recipe, self.tokenizer = recipe, tokenizer
        self.weights = dict(zip(rewards.names, rewards.weights))
        self.ranges = ranges or {}
        self.fact_columns = fact_columns(recipe, dataset)
        # a picture task's rows share their text: without the pictures no row is found again by its prompt
        self.rows = {} if dataset is None or image_column(dataset) else {
            prompt_key(row["prompt"]): row for row in dataset}
        self.paid_means: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self.collapses: deque[bool] = deque(maxlen=COLLAPSE_STEPS)
        self.facts: deque[tuple[int, int]] = deque(maxlen=FACT_STEPS)
        self.judged: dict[tuple[str, int], tuple[list[str], int]] = {}  # (reward, held-out check step) -> refused
        self.factless = ""
        self.fact_best = (0.0, 0)  # the largest share of reinforced completions mentioning a fact, and its step
        self.last_seen: int | None = None  # the fingerprint of the latest batch read

    trainer = None  # the GRPOTrainer whose latest batch is read (set once it is built)
    curve = None  # kit.train.evaluation.HeldOutCurve: its checks so far, when eval.every_steps is on

    def check(self, step: int, logs: dict) -> list:
        batch = Batch.from_trainer_logs(self.trainer._logs) if self.trainer is not None else None
        # TRL logs one generation batch at each of its steps_per_generation steps: the signs of a batch count once
        fresh = batch is not None and (seen := batch.fingerprint()) != self.last_seen
        if fresh:
            self.last_seen = seen
        return self.observe(step, logs, batch, self.curve.checks if self.curve is not None else [], fresh)

    def observe(self, step: int, logs: dict, batch: Batch | None, held_out: list[tuple[int, float]],
                fresh: bool = True) -> list:
        """The signs found at a logged step; `fresh`: `batch` is not one an earlier step already read."""
        for name in self.weights:
            if is_number(value := logs.get(f"rewards/{name}/mean")):
                self.paid_means[name].append((step, value))
        found = list(self.held_out_checks(held_out, batch))
        if fresh and batch is not None and batch.completions:
            found += self.collapse_check(batch)
            found += self.facts_check(step, batch)
        return found

    # -- the reward against the held-out score
    def held_out_checks(self, held_out: list[tuple[int, float]], batch: Batch | None):
        """A reward that rose while held-out strict did not, and paid completions the strict judge refuses: on 64
        prompts strict moves by points from check to check (the CPU demo's fell 89 -> 78% while it learned)."""
        if len(held_out) < 2:
            return
        (late_step, late), (early_step, early) = held_out[-1], earliest_within(held_out)
        if late > early:
            return
        for name, rise in self.risen(early_step, late_step):
            if (name, late_step) not in self.judged:  # once per held-out check: the judge may be a model
                self.judged[name, late_step] = self.refused(name, batch)
            refused, paid = self.judged[name, late_step]
            if refused:
                yield f"gaming:{name}", (
                    f"reward {name} {rise:+.2f} over {late_step - early_step} steps while held-out strict "
                    f"{'fell' if late < early else 'stayed at'} {early:.1%} -> {late:.1%}, and {len(refused)} of "
                    f"{paid} completions it paid in the latest batch are held out as wrong: the policy may be gaming "
                    f"{name}; e.g. {', '.join(repr(shorten(t)) for t in refused[:EXAMPLES])}. Read {SAMPLES}, and "
                    "make the reward check what the held-out judge checks (python -m kit rewards check RECIPE "
                    f"--completions {SAMPLES}).")

    def risen(self, early_step: int, late_step: int):
        for name, weight in self.weights.items():
            series = self.paid_means[name]
            before = [v for s, v in series if s <= early_step][-5:]
            after = [v for s, v in series if s <= late_step][-5:]
            low, high = self.span(name)
            if weight > 0 and before and after and (rise := fmean(after) - fmean(before)) >= RISE * (high - low):
                yield name, rise

    def span(self, name: str) -> tuple[float, float]:
        """A reward's documented range; an end not documented is 0 or 1."""
        low, high = self.ranges.get(name, (None, None))
        return 0.0 if low is None else low, 1.0 if high is None else high

    def refused(self, name: str, batch: Batch | None) -> tuple[list[str], int]:
        """The texts of the batch's completions that `name` paid (half its range or more) and the recipe's strict
        judge refuses, of at most JUDGED; and how many were judged."""
        if batch is None:
            return [], 0
        low, high = self.span(name)
        paid = [i for i, value in enumerate(batch.rewards.get(name, ())) if is_number(value)
                and value >= (low + high) / 2 and prompt_key(batch.prompts[i]) in self.rows][:JUDGED]
        if not paid:
            return [], 0
        strict = judge_strict(self.recipe, [self.rows[prompt_key(batch.prompts[i])] for i in paid],
                              [batch.completions[i] for i in paid], self.tokenizer)
        return [completion_text(batch.completions[i]) for i, ok in zip(paid, strict) if not ok], len(paid)

    # -- one string for every prompt
    def collapse_check(self, batch: Batch):
        groups: dict[str, set[str]] = defaultdict(set)
        for prompt, completion in zip(batch.prompts, batch.completions):
            groups[prompt_key(prompt)].add(" ".join(completion_text(completion).split()))
        collapsed = [next(iter(texts)) for texts in groups.values() if len(texts) == 1]
        common, count = max(((t, collapsed.count(t)) for t in set(collapsed)), key=lambda c: c[1], default=("", 0))
        self.collapses.append(count >= 3 and count >= COLLAPSE_SHARE * len(groups))
        if len(self.collapses) == COLLAPSE_STEPS and all(self.collapses):
            yield "collapsed", (f"in {count} of {len(groups)} groups every completion is the same string, "
                                f"{shorten(common)!r}, whatever the prompt, in {COLLAPSE_STEPS} batches running: the "
                                "policy has found one reply the rewards pay without reading the question. Read "
                                f"{SAMPLES}; pay for what the question asks, or lower the learning rate.")

    # -- the prompt's facts in what GRPO reinforces
    def facts_check(self, step: int, batch: Batch):
        if not self.fact_columns:
            return
        said = total = 0
        for prompt, completion, advantage in zip(batch.prompts, batch.completions, batch.advantages):
            row = self.rows.get(prompt_key(prompt))
            facts = row_facts(row, self.fact_columns) if row is not None else set()
            if not facts or not is_number(advantage) or advantage <= 0:
                continue
            total += 1
            if mentions(completion_text(completion), facts):
                said += 1
            else:
                self.factless = completion_text(completion)  # the latest, quoted if the alarm fires
        self.facts.append((said, total))
        said, total = sum(s for s, _ in self.facts), sum(t for _, t in self.facts)
        if len(self.facts) < FACT_STEPS or total < FACT_MIN:
            return
        if said < FACT_DROP * total and self.fact_best[0] >= FACT_SHARE:  # a drop: not a policy that never did
            best, at = self.fact_best
            columns = ", ".join(self.fact_columns)
            yield "facts_dropped", (f"{said} of {total} completions GRPO reinforced in the last {FACT_STEPS} batches "
                                    f"mention a number or name from their prompt's {columns}, down from "
                                    f"{best:.0%} at step {at} (e.g. {shorten(self.factless)!r}): answers that do "
                                    f"not use the question are memorised or guessed. Read {SAMPLES}; pay for "
                                    "the working, not only the final answer.")
        elif said / total > self.fact_best[0]:
            self.fact_best = (said / total, step)


def watch_for_gaming(trainer, recipe, rewards, curve=None) -> GamingWatch | None:
    """Give the trainer's HealthCallback a GamingWatch over its batches and the held-out checks (`curve`)."""
    from kit.monitor.health import HealthCallback
    from kit.rewards.traits import documented_range

    health = next((c for c in trainer.callback_handler.callbacks if isinstance(c, HealthCallback)), None)
    if health is None:
        return None
    ranges = {r.name: documented_range(r.fn) for r in rewards.rewards}
    health.gaming = GamingWatch(recipe, rewards, trainer.train_dataset, trainer.processing_class, ranges)
    health.gaming.trainer, health.gaming.curve = trainer, curve
    return health.gaming


def earliest_within(held_out: list[tuple[int, float]]) -> tuple[int, float]:
    """The earliest check within WINDOW_STEPS of the latest, or the one before the latest."""
    within = [c for c in held_out[:-1] if held_out[-1][0] - c[0] <= WINDOW_STEPS]
    return within[0] if within else held_out[-2]


def judge_strict(recipe, rows: list[dict], completions: list, tokenizer) -> list[bool]:
    from kit.eval.evaluate import reward_kwargs
    from kit.recipe import default_scoring

    columns = reward_kwargs(rows, [completion_text(c) for c in completions], tokenizer)
    return (recipe.scoring or default_scoring(recipe.rewards)).judge(completions, columns).strict


def prompt_key(prompt) -> str:
    """A prompt as kit.data.row_pictures.row_key finds rows again (a plain-text prompt: its text)."""
    return row_key(prompt) if isinstance(prompt, list) else str(prompt)


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def shorten(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
