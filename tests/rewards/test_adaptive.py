import inspect

import pytest

from kit.recipes import load_recipe
from kit.rewards import AdaptiveWeight, answer_correct
from tests.conftest import chat

RIGHT, WRONG = chat("<answer>7</answer>"), chat("<answer>8</answer>")


def call(reward, right, total=10, log=None):
    completions = [RIGHT] * right + [WRONG] * (total - right)
    return reward(completions=completions, answer=["7"] * total, log_metric=log)


def test_weight_rises_while_failing_and_falls_while_succeeding():
    reward = AdaptiveWeight(answer_correct, window=1)
    call(reward, right=1)
    assert reward.multiplier == pytest.approx(1.2)
    call(reward, right=1)
    assert reward.multiplier == pytest.approx(1.44)
    call(reward, right=5)  # between 0.3 and 0.8: unchanged
    assert reward.multiplier == pytest.approx(1.44)
    call(reward, right=10)
    assert reward.multiplier == pytest.approx(1.296)


def test_values_are_scaled_by_the_current_factor_and_bounded():
    reward = AdaptiveWeight(answer_correct, window=1, bounds=(0.5, 2.0))
    for _ in range(20):
        values = call(reward, right=1)
    assert reward.multiplier == 2.0 and max(values) == 2.0
    for _ in range(20):
        call(reward, right=10)
    assert reward.multiplier == 0.5


def test_logs_multiplier_and_success_rate_every_call():
    logged = {}
    reward = AdaptiveWeight(answer_correct)
    call(reward, right=2, log=lambda name, value: logged.__setitem__(name, value))
    assert logged == {"adaptive/answer_correct/multiplier": pytest.approx(1.2),
                      "adaptive/answer_correct/success_rate": pytest.approx(0.2)}


def test_wrapper_keeps_name_and_columns():
    reward = AdaptiveWeight(answer_correct)
    assert reward.__name__ == "answer_correct"
    assert "answer" in inspect.signature(reward).parameters
    bundle = load_recipe("gsm8k").rewards.with_adaptive(["answer_correct"])
    assert isinstance(bundle.rewards[0].fn, AdaptiveWeight) and bundle.weights == load_recipe("gsm8k").rewards.weights
    assert bundle.columns_needed()["answer_correct"] == ["answer"]
