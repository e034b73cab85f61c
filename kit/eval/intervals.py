"""How sure a held-out score is: a proportion's 95% interval, and whether a gain on the same prompts is more than noise.

    wilson(45, 100)                    -> (0.356, 0.548)  the Wilson score interval of 45 right of 100
    paired_gain(before, after)         -> Gain: after - before, its interval, McNemar's exact p, a verdict

A proportion gets the Wilson interval (sound at small n and near 0% or 100%, where the normal one is not). A gain
between two scorings of the same prompts is tested on the prompts whose outcome changed (McNemar's exact test: of
the b + c prompts that changed, is the split b : c further from even than chance makes likely?), and its interval
is Newcombe's for a paired difference (1998, method 10: each side's Wilson interval, joined with the pairs'
correlation). scipy is imported where a number is computed: it costs half a second the CLI need not pay otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LEVEL = 0.95
NOISE_P = 0.05  # a gain whose McNemar p is at or above this is "within noise"


def wilson(successes: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of `successes` of `n`, as proportions; (0, 1) for no trials."""
    if n <= 0:
        return 0.0, 1.0
    from scipy.stats import binomtest

    ci = binomtest(successes, n).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def mcnemar_exact_p(improved: int, worsened: int) -> float:
    """McNemar's exact two-sided p: under no change, each changed prompt is as likely to go either way."""
    if improved + worsened == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(improved, improved + worsened, 0.5).pvalue)


@dataclass(frozen=True)
class Gain:
    """After minus before on the same n prompts, as proportions."""
    n: int
    both: int  # right before and after
    improved: int  # wrong before, right after
    worsened: int  # right before, wrong after
    neither: int
    difference: float
    low: float
    high: float
    p: float

    @property
    def noise(self) -> bool:
        return self.p >= NOISE_P

    def words(self) -> str:
        """E.g. "+63.5 points [+56, +71], not noise (McNemar exact p < 0.001; 130 prompts better, 3 worse)"."""
        shown = (f"{100 * self.difference:+.1f} points [{100 * self.low:+.0f}, {100 * self.high:+.0f}]")
        p = "p < 0.001" if self.p < 0.001 else f"p = {self.p:.2g}"
        changes = f"McNemar exact {p}; {self.improved} prompts better, {self.worsened} worse"
        return f"{shown}: within noise on {self.n} prompts ({changes})" if self.noise else \
            f"{shown}, not noise ({changes})"


def paired_gain(before: list[bool], after: list[bool], level: float = LEVEL) -> Gain:
    """The gain from `before` to `after`, each prompt's outcome in the same order."""
    if len(before) != len(after) or not before:
        raise ValueError(f"paired outcomes need the same prompts on both sides, got {len(before)} and {len(after)}")
    pairs = list(zip(map(bool, before), map(bool, after)))
    both, improved = pairs.count((True, True)), pairs.count((False, True))
    worsened, neither = pairs.count((True, False)), pairs.count((False, False))
    low, high = newcombe_paired(both, improved, worsened, neither, level)
    n = len(pairs)
    return Gain(n, both, improved, worsened, neither, (improved - worsened) / n, low, high,
                mcnemar_exact_p(improved, worsened))


def newcombe_paired(both: int, improved: int, worsened: int, neither: int,
                    level: float = LEVEL) -> tuple[float, float]:
    """Newcombe's (1998) method 10 interval for after - before from a paired 2x2 table (no continuity correction)."""
    n = both + improved + worsened + neither
    after, before = (both + improved) / n, (both + worsened) / n
    a_low, a_high = wilson(both + improved, n, level)
    b_low, b_high = wilson(both + worsened, n, level)
    phi = correlation(both, improved, worsened, neither)
    below = math.sqrt(max(0.0, (after - a_low) ** 2 - 2 * phi * (after - a_low) * (b_high - before)
                          + (b_high - before) ** 2))
    above = math.sqrt(max(0.0, (a_high - after) ** 2 - 2 * phi * (a_high - after) * (before - b_low)
                          + (before - b_low) ** 2))
    difference = after - before
    return max(-1.0, difference - below), min(1.0, difference + above)


def correlation(both: int, improved: int, worsened: int, neither: int) -> float:
    """The phi coefficient of before and after; 0 where a side never varies (all right or all wrong)."""
    spread = (both + worsened) * (improved + neither) * (both + improved) * (worsened + neither)
    return 0.0 if spread == 0 else (both * neither - improved * worsened) / math.sqrt(spread)
