"""The easy-reward diagnostic on made-up logs: it fires when the heaviest reward stays flat while a lighter one
rises, and stays quiet when the heavy one rises too or nothing moves."""

from kit.monitor.easy_reward import easy_reward_checks
from kit.monitor.health import HealthMonitor

WEIGHTS = {"answer_correct": 2.0, "strict_format": 1.0}


def logs(step: int, correct: float, format_: float) -> dict:
    return {"loss": 0.0, "reward": 2 * correct + format_, "reward_std": 0.5, "frac_reward_zero_std": 0.1,
            "rewards/answer_correct/mean": correct, "rewards/answer_correct/std": 0.3,
            "rewards/strict_format/mean": format_, "rewards/strict_format/std": 0.3}


def stream(correct, format_, steps=30):
    return [logs(s, correct(s), format_(s)) for s in range(steps)]


def codes(logged, weights=WEIGHTS, window=20):
    monitor = HealthMonitor(beta=0.04, window=window, weights=weights)
    found = []
    for step, entry in enumerate(logged, 1):
        found += [d for d in monitor.observe(step, entry) if d.code == "easy_reward_only"]
    return found


def test_fires_once_naming_both_when_only_the_light_reward_rises():
    found = codes(stream(lambda s: 0.0, lambda s: min(0.1 + 0.04 * s, 0.9)))
    assert len(found) == 1 and found[0].step == 20  # as soon as the window is full, said once
    message = found[0].message
    assert "strict_format rose" in message and "answer_correct (weight 2, the heaviest) stayed at 0.00" in message
    assert "stages: [sft, grpo]" in message and "num_generations" in message


def test_quiet_when_the_heavy_reward_rises_too():
    assert codes(stream(lambda s: 0.02 * s, lambda s: 0.1 + 0.03 * s)) == []


def test_quiet_when_every_reward_is_flat():
    assert codes(stream(lambda s: 0.0, lambda s: 0.5)) == []


def test_quiet_when_the_rewards_weigh_the_same():
    rising = stream(lambda s: 0.0, lambda s: 0.1 + 0.03 * s)
    assert codes(rising, weights={"answer_correct": 1.0, "strict_format": 1.0}) == []


def test_quiet_until_the_window_is_full():
    assert codes(stream(lambda s: 0.0, lambda s: 0.1 + 0.04 * s, steps=19)) == []


def test_a_heavy_reward_with_a_wide_range_counts_its_spread_against_that_range():
    recent = stream(lambda s: 0.5 * (s % 2), lambda s: 0.1 + 0.03 * s)[-20:]  # wiggles 0.5 on a 0..20 scale: flat
    assert [c for c, _ in easy_reward_checks(recent, 20, WEIGHTS, {"answer_correct": (0, 20)})] == ["easy_reward_only"]
    assert list(easy_reward_checks(recent, 20, WEIGHTS, {})) == []  # on 0..1 the same wiggle is not flat


def test_a_step_without_the_heavy_reward_says_nothing():
    logged = stream(lambda s: 0.0, lambda s: 0.1 + 0.04 * s)
    logged[25]["rewards/answer_correct/mean"] = None  # a judge that did not answer: n/a
    assert list(easy_reward_checks(logged[-20:], 20, WEIGHTS, {})) == []
