"""Rewards scored by a model, made ready before training: the run's judge and reward-model settings given, each
one's check run.

A judge's endpoint that does not answer, or a reward model that is not a one-label classifier, is said in one
line before anything loads or is written, not after the first rollout (the `preflight` trait,
kit/rewards/traits.py).
"""

from __future__ import annotations

from kit.checks.judge_calibration import calibrate_judges
from kit.config.judging import JudgeConfig
from kit.rewards.judge.reward import configure_judges
from kit.rewards.reward_models.reward import configure_reward_models
from kit.rewards.traits import trait


def prepare_model_rewards(funcs, judge: JudgeConfig, reward_models: dict[str, str] | None = None,
                          calibration: list[dict] | None = None) -> None:
    """`judge`: the run's judge settings; `reward_models`: its {reward name: model} over the recipe's;
    `calibration`: the recipe's JUDGE_CALIBRATION, to test each judge on once it answers (None: not tested, as in
    `kit eval`, which only scores)."""
    configure_judges(funcs, judge)
    configure_reward_models(funcs, reward_models or {})
    for fn in funcs:
        check = trait(fn, "preflight")
        if check is not None:
            check()
    if calibration is not None:
        calibrate_judges(funcs, calibration, judge.calibration)
