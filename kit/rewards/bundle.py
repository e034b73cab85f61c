"""A recipe's rewards: each reward function with its weight, in the form TRL's GRPOTrainer takes them.

    from kit.rewards import RewardBundle, answer_correct, soft_xml_format
    REWARDS = RewardBundle((answer_correct, 2.0), (soft_xml_format(), 0.5))   # weight next to each reward
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from kit.errors import KitError
from kit.rewards.adaptive import AdaptiveWeight

RewardFn = Callable[..., list[float | None]]


@dataclass(frozen=True)
class Reward:
    fn: RewardFn
    weight: float

    @property
    def name(self) -> str:
        return self.fn.__name__  # TRL logs each reward as rewards/<name>/mean


class RewardBundle:
    """Reward functions with their weights, in the form TRL's GRPOTrainer takes them."""

    def __init__(self, *rewards: tuple[RewardFn, float] | Reward):
        self.rewards = [r if isinstance(r, Reward) else Reward(*r) for r in rewards]
        names = [r.name for r in self.rewards]
        duplicated = {n for n in names if names.count(n) > 1}
        if duplicated:
            raise KitError(f"reward names must be unique; repeated: {', '.join(sorted(duplicated))}")

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.rewards]

    @property
    def funcs(self) -> list[RewardFn]:
        return [r.fn for r in self.rewards]

    @property
    def weights(self) -> list[float]:
        return [r.weight for r in self.rewards]

    def reweighted(self, overrides: dict[str, float]) -> RewardBundle:
        """A copy with some weights changed by name; weight 0 drops the reward."""
        unknown = [name for name in overrides if name not in self.names]
        if unknown:
            raise KitError(f"unknown reward '{unknown[0]}'; choose from: {', '.join(self.names)}")
        kept = [Reward(r.fn, overrides.get(r.name, r.weight)) for r in self.rewards]
        kept = [r for r in kept if r.weight != 0]
        if not kept:
            raise KitError("every reward has weight 0; keep at least one")
        return RewardBundle(*kept)

    def with_adaptive(self, names: list[str]) -> RewardBundle:
        """A copy in which the named rewards scale with the running success rate (kit.rewards.adaptive)."""
        unknown = [name for name in names if name not in self.names]
        if unknown:
            raise KitError(f"adaptive_rewards: unknown reward '{unknown[0]}'; choose from: {', '.join(self.names)}")
        return RewardBundle(*(Reward(AdaptiveWeight(r.fn), r.weight) if r.name in names else r for r in self.rewards))

    def columns_needed(self) -> dict[str, list[str]]:
        """Dataset columns each reward takes by name (its parameters without defaults)."""
        ignored = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
                   "environments"}  # TRL's own arguments, not dataset columns
        needed = {}
        for r in self.rewards:
            params = inspect.signature(r.fn).parameters.values()
            needed[r.name] = [
                p.name for p in params
                if p.name not in ignored and p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            ]
        return needed
