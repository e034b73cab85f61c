"""Will GRPO learn? The groups of completions it starts from, scored, before its first step.

    report = learnability(scores, weights, cut, tool_calling, warm_started=False)
    print("\n".join(report.lines()))     # the verdict, with the fix
    write_run_section(out.run_file, "learnability", report.record())

GRPO learns from differences within a group (the grpo.num_generations completions of one prompt): a group
whose completions all score alike gives every one of them advantage 0, and no gradient. TRL logs the share of
such groups (frac_reward_zero_std) after each step; this says it before the first, from K prompts sampled as
the trainer samples them (kit.train.learnability does the sampling). It warns; it never stops a run.

`scores` holds each reward's values, one list per group (None: the reward does not apply, as TRL's NaN). The
weighted total is TRL's: the weighted sum of the values that apply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import mean, pstdev

ALIKE = 1e-6  # rewards closer than this score alike: TRL's advantage is (r - mean) / (std + 1e-4), ~0 then
MOSTLY = 0.8  # this share of groups alike or more: little to learn from
MANY_CUT = 0.5  # this share of completions at the length cap or more: said as a problem of its own
TOTAL = "weighted total"


@dataclass
class RewardSpread:
    """One reward over the sampled groups: how many groups score alike on it, its mean and spread."""

    alike: int
    mean: float | None  # over the completions it applies to; None: it applied to none
    std: float | None  # the spread over all of them
    within: float | None  # the mean spread within a group: what GRPO's advantages are made of


@dataclass
class Learnability:
    groups: int
    size: int  # completions per group (grpo.num_generations)
    rewards: dict[str, RewardSpread]  # each reward's, then the weighted total's
    weights: dict[str, float]
    cut: float  # share of completions cut at the length cap
    tool_calling: float | None = None  # with tools: share of completions with a parsed tool call
    warm_started: bool = False
    max_tokens: int | None = None
    at_ceiling: set[str] = field(default_factory=set)  # rewards at their documented top in every completion

    @property
    def alike(self) -> int:
        return self.rewards[TOTAL].alike

    @property
    def learns(self) -> bool:
        return not self.mostly_alike(TOTAL) and not self.easy_only

    def mostly_alike(self, name: str) -> bool:
        """The reward (or the weighted total) scores alike in MOSTLY of the groups or more."""
        return self.rewards[name].alike >= MOSTLY * self.groups

    @property
    def easy_only(self) -> bool:
        """The groups differ, but not on the heaviest rewards: GRPO would learn the lighter ones alone (the kit's
        tool demo once did: no sampled reply called the tool, so `exact_match` was 0 throughout while
        `answer_format` differed, and GRPO learned the format with wrong numbers). As kit.monitor.easy_reward
        judges it while training: silent when every reward weighs the same."""
        heavy = self.heaviest()
        return not self.mostly_alike(TOTAL) and bool(heavy) and all(map(self.mostly_alike, heavy))

    def heaviest(self) -> list[str]:
        """The rewards of the largest weight, where some weigh less (none: every reward weighs the same)."""
        paying = {name: w for name, w in self.weights.items() if name in self.rewards and w > 0}
        if len(set(paying.values())) < 2:
            return []
        top = max(paying.values())
        return [name for name, w in paying.items() if w == top]

    def differing(self) -> list[str]:
        """The rewards that differ within enough groups to teach something."""
        return [name for name, w in self.weights.items() if w > 0 and name in self.rewards
                and not self.mostly_alike(name)]

    def culprit(self) -> str:
        """What the verdict names: the highest-weighted reward alike in most groups (the one GRPO would learn most
        from, were it to differ), else the weighted total."""
        alike = [name for name, weight in self.weights.items()
                 if weight and name in self.rewards and self.mostly_alike(name)]
        return max(alike, key=lambda name: self.weights[name], default=TOTAL)

    def verdict(self) -> str:
        if self.easy_only:
            name = self.heaviest()[0]
            lighter = ", ".join(f"{other} (x{self.weights[other]:g})" for other in self.differing())
            return (f"learnability: {self.rewards[name].alike} of {self.groups} groups score alike on {name}, the "
                    f"heaviest reward (x{self.weights[name]:g}); they differ only on {lighter}: GRPO would learn the "
                    f"easy reward alone; {self.fix(name)}")
        if self.learns:
            differ = self.groups - self.alike
            return (f"learnability: {differ} of {self.groups} groups differ in reward: GRPO has something to learn "
                    "from")
        name = self.culprit()
        alike = self.rewards[name].alike
        amount = "nothing" if self.alike == self.groups else "little"
        return (f"learnability: {alike} of {self.groups} groups score alike on {name}: GRPO has {amount} to learn "
                f"from; {self.fix(name)}")

    def fix(self, name: str) -> str:
        if name in self.at_ceiling:
            return "the rows are too easy for this model: use harder rows"
        start = ("warm start longer (sft.max_steps) or with better examples" if self.warm_started
                 else "warm start with SFT (`stages: [sft, grpo]`)")
        return f"{start}, use easier rows, or raise grpo.num_generations (now {self.size})"

    def lines(self) -> list[str]:
        """A few console lines: the verdict, each reward's spread, the length cap, tool calls."""
        lines = [self.verdict()]
        for name, s in self.rewards.items():
            if s.mean is None:
                lines.append(f"  {name}: applied to no completion")
                continue
            lines.append(f"  {name}: {s.alike} of {self.groups} groups alike, mean {s.mean:.3f}, spread {s.std:.3f} "
                         f"(within a group {s.within:.3f})")
        cap = f" ({self.max_tokens} tokens)" if self.max_tokens else ""
        cut = f"  {percent(self.cut)} of completions cut at grpo.max_completion_length{cap}"
        if self.cut >= MANY_CUT:
            cut += ": raise it, or ask for shorter answers (a cut answer scores as a wrong one)"
        lines.append(cut)
        if self.tool_calling is not None:
            line = f"  {percent(self.tool_calling)} of completions make a tool call that parses"
            if self.tool_calling == 0:
                line += ": the model does not use its tools yet (its chat template, or an SFT warm start on calls)"
            lines.append(line)
        return lines

    def record(self) -> dict:
        """run.yaml's `learnability` section."""
        return {"groups": self.groups, "group_size": self.size, "groups_alike": self.alike, "learns": self.learns,
                "easy_reward_only": self.easy_only, "verdict": self.verdict(),
                "rewards": {name: {"groups_alike": s.alike, "mean": rounded(s.mean), "std": rounded(s.std),
                                   "std_within_groups": rounded(s.within)} for name, s in self.rewards.items()},
                "cut_at_length_cap": round(self.cut, 4),
                **({"tool_calling": round(self.tool_calling, 4)} if self.tool_calling is not None else {}),
                "warm_started": self.warm_started}


def learnability(scores: dict[str, list[list[float | None]]], weights: dict[str, float], cut: list[bool],
                 tool_calling: list[bool] | None = None, warm_started: bool = False, max_tokens: int | None = None,
                 ceilings: dict[str, float | None] | None = None) -> Learnability:
    """The report on `scores` (each reward's values, group by group); `ceilings`: each reward's documented top."""
    groups = next(iter(scores.values()))
    total = [[weighted_total(scores, weights, g, i) for i in range(len(group))] for g, group in enumerate(groups)]
    spreads = {name: spread(values) for name, values in scores.items()}
    spreads[TOTAL] = spread(total)
    top = {name for name, ceiling in (ceilings or {}).items()
           if ceiling is not None and at_ceiling(scores[name], ceiling)}
    return Learnability(len(groups), len(groups[0]) if groups else 0, spreads, weights, share(cut),
                        share(tool_calling) if tool_calling is not None else None, warm_started, max_tokens, top)


def weighted_total(scores: dict[str, list[list[float | None]]], weights: dict[str, float], group: int,
                   index: int) -> float:
    """TRL's reward for one completion: the weighted sum of the rewards that apply (torch.nansum: 0 if none does)."""
    values = [(weights.get(name, 0.0), values[group][index]) for name, values in scores.items()]
    return sum(w * v for w, v in values if v is not None)


def spread(groups: list[list[float | None]]) -> RewardSpread:
    every = [v for group in groups for v in group if v is not None]
    if not every:
        return RewardSpread(len(groups), None, None, None)
    within = [pstdev(applied) for group in groups if len(applied := [v for v in group if v is not None]) > 1]
    return RewardSpread(sum(alike(group) for group in groups), mean(every), pstdev(every),
                        mean(within) if within else 0.0)


def alike(group: list[float | None]) -> bool:
    """The completions it applies to all score the same (fewer than two: nothing to compare)."""
    values = [v for v in group if v is not None]
    return len(values) < 2 or max(values) - min(values) < ALIKE


def at_ceiling(groups: list[list[float | None]], top: float) -> bool:
    values = [v for group in groups for v in group if v is not None]
    return bool(values) and all(math.isclose(v, top, abs_tol=ALIKE) or v > top for v in values)


def share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
