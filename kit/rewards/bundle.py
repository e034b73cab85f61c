"""A recipe's rewards: each reward function with its weight, in the form TRL's GRPOTrainer takes them.

    from kit.rewards import RewardBundle, answer_correct, soft_xml_format
    REWARDS = RewardBundle((answer_correct, 2.0), (soft_xml_format(), 0.5))   # weight next to each reward

TRL adds up weight x value over the rewards, so a negative weight makes a function that scores what is unwanted
a penalty: with `(shouting, -0.5)`, a reply it gives 1 loses 0.5. The kit's own rewards score what is wanted,
so they take positive weights (a published penalty, in -1..0, already carries its sign).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

from kit.errors import KitError
from kit.rewards.adaptive import AdaptiveWeight
from kit.rewards.trl_call import TRL_ARGUMENTS

RewardFn = Callable[..., list[float | None]]


@dataclass(frozen=True)
class Reward:
    fn: RewardFn
    weight: float

    def __post_init__(self):
        if not callable(self.fn):
            raise KitError(f"{self.fn!r:.60} is not a reward function; give RewardBundle a function with its weight, "
                           "e.g. RewardBundle((correctness_reward, 2.0))")
        if not hasattr(self.fn, "__name__"):
            raise KitError(unnamed(self.fn))
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or not math.isfinite(self.weight):
            raise KitError(f"reward '{self.name}': its weight must be a finite number, not {self.weight!r}")
        if isinstance(self.fn, AdaptiveWeight) and self.fn.penalty != (self.weight < 0):
            raise KitError(f"reward '{self.name}' has weight {self.weight:g} and an AdaptiveWeight that counts a "
                           f"value of {self.fn.success_at:g} or more as {'failure' if self.fn.penalty else 'success'}; "
                           f"write AdaptiveWeight({self.name}, penalty={self.weight < 0}), or list it in the config's "
                           "adaptive_rewards instead, which reads the weight's sign")

    @property
    def name(self) -> str:
        return self.fn.__name__  # TRL logs each reward as rewards/<name>/mean


def unnamed(obj) -> str:
    """What to do with a callable object that has no __name__ (TRL's metric name): the guide's AdaptiveReward, a
    functools.partial, an instance of a class of one's own."""
    inner = getattr(obj, "func", None) or getattr(obj, "fn", None)  # the function it wraps, if it says
    name = getattr(inner, "__name__", None)
    shown = f"{type(obj).__name__}({name})" if name else f"a {type(obj).__name__} object"
    if "adaptive" in type(obj).__name__.lower() and name:
        return (f"reward {shown} has no __name__ (TRL names each reward's metric after it), and nothing in training "
                "would call its adjust_weight: use the kit's adaptive scaling instead, which adjusts the scale every "
                f"step and logs it. Give {name} itself to RewardBundle and set adaptive_rewards: [{name}] in the "
                f"config (or write AdaptiveWeight({name}), from kit.rewards)")
    return (f"reward {shown} has no __name__ (TRL names each reward's metric after it): give it one "
            "(reward.__name__ = \"my_reward\") or pass a function defined with def; for a reward whose scale follows "
            f"its success rate, as the guide's AdaptiveReward, use adaptive_rewards: [{name or 'its_name'}] in the "
            "config")


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
        """A copy with some weights changed by name; weight 0 drops the reward, a negative one makes it a penalty."""
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
        return RewardBundle(*(Reward(AdaptiveWeight(r.fn, penalty=r.weight < 0), r.weight) if r.name in names else r
                              for r in self.rewards))

    def columns_needed(self) -> dict[str, list[str]]:
        """Dataset columns each reward takes by name (its parameters without defaults)."""
        needed = {}
        for r in self.rewards:
            params = inspect.signature(r.fn).parameters.values()
            needed[r.name] = [
                p.name for p in params
                if p.name not in TRL_ARGUMENTS and p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            ]
        return needed
