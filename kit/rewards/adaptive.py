"""Adaptive reward scaling (the guide's AdaptiveReward, wired for real).

A wrapped reward's values are multiplied by a factor that follows the running success rate: while the
model mostly fails (rate < 0.3) the factor grows x1.2 per step, so the signal it needs is louder;
once it mostly succeeds (rate > 0.8) the factor shrinks x0.9, leaving room for the other rewards.
The factor stays within bounds, and the factor and the rate are logged every step through TRL's
`log_metric` (as adaptive/<name>/multiplier and adaptive/<name>/success_rate).

A success is a value of `success_at` or more. A penalty (a reward given a negative weight, TRL's total being
the sum of weight x value) succeeds where it gives less: the completions it spares. So its factor grows while
it penalizes most completions, and shrinks once the model avoids what it penalizes.

    RewardBundle((AdaptiveWeight(answer_correct), 2.0), ...)   # or in the config: adaptive_rewards: [answer_correct]
    RewardBundle((AdaptiveWeight(style_penalty, penalty=True), -0.5))   # adaptive_rewards reads the sign itself

The guide's AdaptiveReward class is this, wired in: nothing in training would call its adjust_weight, so the
kit refuses it in a RewardBundle and points here.
"""

from __future__ import annotations

import inspect
from collections import deque

from kit.rewards.traits import trait


class AdaptiveWeight:
    def __init__(self, fn, success_at: float = 0.5, low: float = 0.3, high: float = 0.8, up: float = 1.2,
                 down: float = 0.9, window: int = 8, bounds: tuple[float, float] = (0.25, 4.0), penalty: bool = False):
        self.fn = fn
        self.penalty = penalty  # given a negative weight: a value below success_at is the model's success
        self.__name__ = fn.__name__  # TRL names the metric after it
        self.__signature__ = inspect.signature(fn)  # so the kit still sees which columns it reads
        self.success_at, self.low, self.high, self.up, self.down, self.bounds = success_at, low, high, up, down, bounds
        self.history: deque[float] = deque(maxlen=window)
        self.multiplier = 1.0
        low_value, high_value = trait(fn, "reward_range", (0.0, 1.0))
        self.reward_range = (min(0.0, low_value * bounds[1]), high_value * bounds[1])

    @property
    def success_rate(self) -> float | None:
        return sum(self.history) / len(self.history) if self.history else None

    def __call__(self, completions, **kwargs) -> list[float | None]:
        values = self.fn(completions=completions, **kwargs)
        scaled = [None if v is None else v * self.multiplier for v in values]  # this batch uses the current factor
        scored = [v for v in values if v is not None]
        if scored:
            self.history.append(sum((v >= self.success_at) != self.penalty for v in scored) / len(scored))
            self.adjust()
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            log_metric(f"adaptive/{self.__name__}/multiplier", self.multiplier)
            if self.success_rate is not None:
                log_metric(f"adaptive/{self.__name__}/success_rate", self.success_rate)
        return scaled

    def adjust(self) -> None:
        rate = self.success_rate
        if rate < self.low:
            self.multiplier *= self.up
        elif rate > self.high:
            self.multiplier *= self.down
        self.multiplier = min(self.bounds[1], max(self.bounds[0], self.multiplier))
