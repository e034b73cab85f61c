"""Each health diagnostic fires on a metrics stream built to trigger it, and a healthy stream stays quiet."""

import math

import pytest

from kit.monitor.health import HealthMonitor


def healthy(step: int) -> dict:
    """Rising reward with spread, nothing clipped, both rewards varying."""
    return {"loss": 1e-3, "grad_norm": 0.5, "reward": 0.2 + 0.02 * step, "reward_std": 0.4,
            "frac_reward_zero_std": 0.1, "completions/clipped_ratio": 0.1, "kl": 0.05,
            "rewards/correct/mean": 0.1 + 0.02 * step, "rewards/correct/std": 0.4,
            "rewards/format/mean": 0.5, "rewards/format/std": 0.3}


def run(stream, beta=0.04, window=20):
    monitor = HealthMonitor(beta=beta, window=window)
    codes = []
    for step, logs in enumerate(stream, 1):
        codes += [(d.code, d.step) for d in monitor.observe(step, logs)]
    return codes


def test_healthy_stream_is_quiet():
    assert run([healthy(s) for s in range(40)]) == []


def test_beta_zero_is_explained_once_not_alarmed():
    codes = run([healthy(s) for s in range(40)], beta=0.0)
    assert codes == [("beta_zero", 1)]


@pytest.mark.parametrize("code, change", [
    ("no_signal", {"reward_std": 0.01}),
    ("no_signal", {"frac_reward_zero_std": 0.95}),
    ("kl_high", {"kl": 0.8}),
    ("clipped", {"completions/clipped_ratio": 0.97}),
    ("stuck:correct", {"rewards/correct/mean": 0.0, "rewards/correct/std": 0.0}),
    ("stuck:format", {"rewards/format/mean": 1.0, "rewards/format/std": 0.0}),
])
def test_each_diagnostic_fires_once_when_it_starts(code, change):
    stream = [healthy(s) for s in range(10)] + [{**healthy(s), **change} for s in range(10, 30)]
    fired = [c for c in run(stream) if c[0] == code]
    assert len(fired) == 1 and fired[0][1] > 10  # after the change, printed once, not every step


def test_flat_reward_over_the_window():
    stream = [{**healthy(0), "reward": 0.5 + 0.001 * (s % 2)} for s in range(30)]
    assert ("reward_flat", 20) in run(stream)


@pytest.mark.parametrize("key, value", [("loss", math.nan), ("grad_norm", math.inf)])
def test_not_finite(key, value):
    stream = [healthy(s) for s in range(5)] + [{**healthy(5), key: value}]
    assert run(stream) == [("not_finite", 6)]


def test_an_fp16_gradient_overflow_is_left_to_the_loss_scaler(tmp_path):
    """Under fp16 an inf gradient norm is a step the scaler skips (kit.monitor.finite counts them); a nan loss
    still stops the run."""
    from types import SimpleNamespace

    from kit.monitor.health import HealthCallback

    health = HealthCallback(HealthMonitor(beta=0.04), tmp_path / "diagnostics.jsonl")
    state = SimpleNamespace(global_step=1, is_world_process_zero=True)
    control = SimpleNamespace(should_save=False, should_training_stop=False)
    health.on_log(SimpleNamespace(fp16=True), state, control, logs={**healthy(1), "grad_norm": math.inf})
    assert not control.should_training_stop
    health.on_log(SimpleNamespace(fp16=False), state, control, logs={**healthy(1), "grad_norm": math.inf})
    assert control.should_training_stop


def test_diagnostic_fires_again_after_it_clears():
    bad = {"completions/clipped_ratio": 0.99}
    stream = ([{**healthy(s), **bad} for s in range(5)] + [healthy(s) for s in range(5)]
              + [{**healthy(s), **bad} for s in range(5)])
    assert [c for c in run(stream) if c[0] == "clipped"] == [("clipped", 3), ("clipped", 13)]


@pytest.mark.parametrize("rank_zero", [True, False])
def test_every_rank_stops_on_a_diverged_loss_but_only_rank_zero_writes(tmp_path, rank_zero):
    from types import SimpleNamespace

    from transformers import TrainerControl

    from kit.monitor.health import HealthCallback

    path = tmp_path / "diagnostics.jsonl"
    callback = HealthCallback(HealthMonitor(beta=0.04), path)
    control = TrainerControl()
    state = SimpleNamespace(is_world_process_zero=rank_zero, global_step=1)
    callback.on_log(None, state, control, logs={**healthy(1), "loss": math.nan})
    assert control.should_training_stop and control.should_save  # ranks stopping apart would hang the others
    assert path.exists() == rank_zero


def test_a_reward_giving_nan_is_warned_about_by_name():
    # kit.rewards.guard logs rewards/<name>/not_finite only for a batch where the reward gave NaN or inf
    stream = [healthy(s) for s in range(6)]
    stream[3] = {**stream[3], "rewards/correct/not_finite": 0.25}
    assert run(stream) == [("not_finite:correct", 4)]
    monitor = HealthMonitor(beta=0.04)
    message = [d.message for d in monitor.observe(1, {**healthy(1), "rewards/correct/not_finite": 0.25})][0]
    assert message.startswith("reward correct returned NaN or inf for 25% of completions")


def stuck_at(value: float, ranges: dict, weights: dict | None = None) -> list[str]:
    stream = [{**healthy(s), "rewards/overlong/mean": value, "rewards/overlong/std": 0.0} for s in range(10)]
    monitor = HealthMonitor(beta=0.04, window=20, ranges=ranges, weights=weights)
    return [d.message for step, logs in enumerate(stream, 1) for d in monitor.observe(step, logs)]


def test_stuck_reward_is_judged_by_its_documented_range():
    penalty = {"overlong": (-1.0, 0.0)}  # DAPO's soft overlong punishment
    assert stuck_at(0.0, penalty) == []  # nothing overlong: its best value, not a dead reward
    assert any("stuck at its minimum (-1)" in m for m in stuck_at(-1.0, penalty))
    assert any("stuck at its minimum (0)" in m for m in stuck_at(0.0, {}))  # unknown range: [0, 1]


def test_a_penalty_given_a_negative_weight_is_stuck_only_when_it_penalizes_every_completion():
    penalty = {"overlong": -0.5}  # a 0..1 function that the weight makes a penalty
    assert stuck_at(0.0, {}, penalty) == []  # nothing penalized: its best value, not a dead reward
    (message,) = [m for m in stuck_at(1.0, {}, penalty) if "overlong" in m]
    assert "reward overlong (weight -0.5) stuck at its maximum (1)" in message


def with_tools(step: int, calling: float, unparsed: float = 0.0) -> dict:
    return {**healthy(step), "tools/calling": calling, "tools/unparsed": unparsed, "tools/turns": 1 + calling}


def run_tools(stream):
    monitor = HealthMonitor(beta=0.04, window=20, tools=True)
    return [(d.code, d.step) for step, logs in enumerate(stream, 1) for d in monitor.observe(step, logs)]


def test_tool_use_that_goes_well_is_quiet():
    assert run_tools([with_tools(s, 0.8) for s in range(30)]) == []


def test_no_completion_calling_a_tool_is_said():
    assert run_tools([with_tools(s, 0.0) for s in range(8)]) == [("tools_unused", 5)]


def test_a_model_that_stops_calling_tools_is_told_apart_from_one_that_never_did():
    stream = [with_tools(s, 0.6) for s in range(6)] + [with_tools(s, 0.0) for s in range(6, 12)]
    assert run_tools(stream) == [("tools_stopped", 11)]


def test_most_tool_calls_failing_to_parse_is_said():
    assert run_tools([with_tools(s, 0.1, unparsed=0.7) for s in range(6)]) == [("tools_unparsed", 5)]


def test_without_tools_the_tool_checks_stay_off():
    assert run([with_tools(s, 0.0, unparsed=0.9) for s in range(10)]) == []
