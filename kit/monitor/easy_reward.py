"""A run that learns only the easy reward: the heaviest reward flat while a lighter one rises.

The kit's tool demo once settled on its format reward (answer_format 1.0) while no reply called the tool and
exact_match, the reward that mattered, stayed at 0. The total reward rose, so nothing else looked wrong.
"""

from __future__ import annotations

FLAT = 0.05  # the heavy reward's spread over the window, as a share of its range, that counts as flat
RISE = 0.2  # the easy reward's rise from the window's first half to its second, as a share of its range


def easy_reward_checks(recent: list[dict], window: int, weights: dict[str, float], ranges: dict[str, tuple]):
    """(code, message) when, over the last `window` logged steps, every top-weighted reward stayed flat while a
    reward of lower (positive) weight rose."""
    if len(recent) < window:
        return
    means = {name: series for name in weights if (series := _series(recent, name))}
    paying = {name: weights[name] for name in means if weights[name] > 0}
    if len(paying) < 2 or len(set(paying.values())) < 2:
        return  # one reward, or all weighed the same: no heavy one to be left behind
    top = max(paying.values())
    heavy = [name for name, weight in paying.items() if weight == top]
    if not all(_spread(means[name]) < FLAT * _width(ranges, name) for name in heavy):
        return
    rising = [(name, *_halves(means[name])) for name in paying if paying[name] < top]
    rising = [(name, early, late) for name, early, late in rising if late - early > RISE * _width(ranges, name)]
    if not rising:
        return
    easy, early, late = max(rising, key=lambda r: (r[2] - r[1]) / _width(ranges, r[0]))
    stuck = heavy[0]
    yield "easy_reward_only", (
        f"only the easy reward is learning: {easy} rose {early:.2f} -> {late:.2f} over {window} steps while {stuck} "
        f"(weight {top:g}, the heaviest) stayed at {means[stuck][-1]:.2f}: the policy collects the easy points and "
        f"never earns the ones that matter. Check the samples; try a warm start (stages: [sft, grpo]), easier rows, "
        f"a larger grpo.num_generations, or a lower weight for {easy}.")


def _series(recent: list[dict], name: str) -> list[float] | None:
    """The reward's mean at each step, or None when a step lacks it (a judge that did not answer: n/a)."""
    values = [m.get(f"rewards/{name}/mean") for m in recent]
    return None if any(not isinstance(v, (int, float)) for v in values) else values


def _spread(values: list[float]) -> float:
    return max(values) - min(values)


def _halves(values: list[float]) -> tuple[float, float]:
    half = len(values) // 2
    return sum(values[:half]) / half, sum(values[half:]) / (len(values) - half)


def _width(ranges: dict[str, tuple], name: str) -> float:
    """The reward's documented range (kit.rewards.traits), 0..1 where it is not known or not finite."""
    low, high = ranges.get(name, (None, None))
    low, high = 0.0 if low is None else low, 1.0 if high is None else high
    width = high - low
    return width if 0 < width < float("inf") else 1.0
