"""The statistics against values worked out here from their formulas (statistics.NormalDist, math.comb), not scipy."""

import math
from statistics import NormalDist

import pytest

from kit.eval.intervals import correlation, mcnemar_exact_p, newcombe_paired, paired_gain, wilson

Z = NormalDist().inv_cdf(0.975)


def wilson_by_hand(x: int, n: int) -> tuple[float, float]:
    centre = (x + Z * Z / 2) / (n + Z * Z)
    half = Z / (n + Z * Z) * math.sqrt(x * (n - x) / n + Z * Z / 4)
    return centre - half, centre + half


def test_wilson_of_45_in_100_is_the_textbook_interval():
    low, high = wilson(45, 100)
    assert (round(low, 4), round(high, 4)) == (0.3561, 0.5476)
    assert (low, high) == pytest.approx(wilson_by_hand(45, 100), abs=1e-12)


@pytest.mark.parametrize("x, n", [(0, 10), (10, 10), (1, 64), (63, 64), (117, 200)])
def test_wilson_stays_inside_0_and_1_at_the_edges(x, n):
    low, high = wilson(x, n)
    assert 0 <= low <= x / n <= high <= 1
    assert (low, high) == pytest.approx(wilson_by_hand(x, n), abs=1e-12)


def mcnemar_by_hand(b: int, c: int) -> float:
    """Two-sided exact: twice the smaller tail of Binomial(b + c, 1/2), at most 1."""
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize("b, c", [(3, 12), (12, 3), (0, 5), (7, 7), (40, 25), (1, 0)])
def test_mcnemar_exact_p_is_the_binomial_tail_of_the_discordant_pairs(b, c):
    assert mcnemar_exact_p(b, c) == pytest.approx(mcnemar_by_hand(b, c), rel=1e-9)


def test_mcnemar_of_3_against_12_is_0_035():
    assert mcnemar_exact_p(3, 12) == pytest.approx(2 * (1 + 15 + 105 + 455) / 2 ** 15)  # 0.03515625


def test_no_changed_prompt_is_no_evidence():
    assert mcnemar_exact_p(0, 0) == 1.0


def test_newcombe_without_correlation_is_the_square_and_add_of_the_two_wilson_intervals():
    both, improved, worsened, neither = 30, 30, 10, 10  # phi = (30*10 - 30*10) / ... = 0
    assert correlation(both, improved, worsened, neither) == 0
    after, before = 60 / 80, 40 / 80
    (a_low, a_high), (b_low, b_high) = wilson_by_hand(60, 80), wilson_by_hand(40, 80)
    expected = (after - before - math.hypot(after - a_low, b_high - before),
                after - before + math.hypot(a_high - after, before - b_low))
    assert newcombe_paired(both, improved, worsened, neither) == pytest.approx(expected, abs=1e-12)


def test_pairs_that_move_together_narrow_the_interval():
    together = newcombe_paired(50, 20, 0, 30)  # same marginals as below, strongly correlated
    apart = newcombe_paired(20, 50, 30, 0)
    assert together[1] - together[0] < apart[1] - apart[0]
    assert together[0] < 0.2 < together[1] and apart[0] < 0.2 < apart[1]


def test_a_big_gain_is_not_noise_and_a_small_one_is():
    before = [False] * 150 + [True] * 50
    big = paired_gain(before, [True] * 180 + [False] * 20)
    assert (big.improved, big.worsened, big.difference) == (150, 20, 0.65) and not big.noise
    assert big.low < 0.65 < big.high and big.words().startswith("+65.0 points [")
    assert ", not noise (McNemar exact p < 0.001; 150 prompts better, 20 worse)" in big.words()
    small = paired_gain(before, [True] * 4 + [False] * 146 + [True] * 50)
    assert small.p == pytest.approx(mcnemar_by_hand(4, 0)) and small.noise
    assert "+2.0 points [" in small.words() and ": within noise on 200 prompts (McNemar exact p = 0.12" in small.words()


def test_unpaired_outcomes_are_refused():
    with pytest.raises(ValueError, match="same prompts"):
        paired_gain([True, False], [True])
