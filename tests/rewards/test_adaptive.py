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


def shouting(completions, **kwargs):
    """A style penalty as the guide writes them: 1 for what it penalizes, given a negative weight."""
    return [1.0 if "!" in c[0]["content"] else 0.0 for c in completions]


def test_a_penalty_under_adaptive_rewards_counts_a_completion_it_spares_as_a_success():
    from kit.rewards import RewardBundle

    bundle = RewardBundle((answer_correct, 1.0), (shouting, -0.5)).with_adaptive(["shouting"])
    penalty = bundle.rewards[1].fn
    assert bundle.weights == [1.0, -0.5] and isinstance(penalty, AdaptiveWeight) and penalty.penalty
    penalty(completions=[chat("calm")] * 10)  # nothing penalized: the model succeeds, the penalty quietens
    assert penalty.success_rate == 1.0 and penalty.multiplier == pytest.approx(0.9)
    for _ in range(3):  # everything penalized: the model fails, and once the rate (1/4) is below 0.3 it grows
        penalty(completions=[chat("loud!")] * 10)
    assert penalty.success_rate == 0.25 and penalty.multiplier == pytest.approx(0.9 * 1.2)


def test_an_adaptive_weight_given_a_negative_weight_must_say_it_is_a_penalty():
    from kit.errors import KitError
    from kit.rewards import RewardBundle

    with pytest.raises(KitError, match=r"weight -0.5.*AdaptiveWeight\(shouting, penalty=True\)"):
        RewardBundle((AdaptiveWeight(shouting), -0.5))
    assert RewardBundle((AdaptiveWeight(shouting, penalty=True), -0.5)).weights == [-0.5]
