"""The reward-model recipe as the README runs it, offline: `make train RECIPE=helpful_preference PROFILE=smoke` with
the tiny reward model in the recipe's model's place, then `kit eval` scoring with the run's reward model; and the
recipe's own hub model, unreachable here, refused in one line before anything is written."""

import pytest
import yaml

from kit.monitor.metrics import read_metrics
from tests.e2e.cli import check_run_layout, kit, make

pytestmark = pytest.mark.slow
TINY = "reward_models.preference=kit:tiny-reward"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No hub, even where one is reachable: the recipe's own model must not be what scores."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_make_train_with_the_tiny_reward_model_then_kit_eval(tmp_path):
    out = tmp_path / "run"
    trained = make("train", "RECIPE=helpful_preference", "PROFILE=smoke", f"OUT={out}", f"ARGS={TINY}")
    assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr[-3000:]
    check_run_layout(out, steps=2, reward="preference")
    steps = [m for m in read_metrics(out / "metrics.jsonl") if "reward" in m]
    assert all(0 < m["rewards/preference/mean"] < 1 for m in steps), steps  # scored by the model, sigmoid
    record = yaml.safe_load((out / "run.yaml").read_text())
    assert record["reward_models"] == {"preference": "kit:tiny-reward"}
    source = record["inputs"]["reward_models"]["preference"]
    assert (source["kind"], source["model"], source["normalise"]) == ("reward_model", "kit:tiny-reward", "sigmoid")

    evaluated = kit("eval", "helpful_preference", "--model", out / "merged", "--n", "4")  # the run's reward model
    assert evaluated.returncode == 0, evaluated.stdout[-3000:] + evaluated.stderr[-3000:]
    assert "reward preference" in evaluated.stdout and "strict accuracy" in evaluated.stdout


def test_the_recipes_hub_model_offline_is_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "run"
    trained = make("train", "RECIPE=helpful_preference", "PROFILE=smoke", f"OUT={out}")
    assert trained.returncode != 0
    said = [line for line in (trained.stdout + trained.stderr).splitlines() if line.startswith("error: ")]
    assert len(said) == 1 and "cannot read the reward model 'Skywork/Skywork-Reward-V2-Qwen3-0.6B'" in said[0], said
    assert "offline, kit:tiny-reward runs the path" in said[0]
    assert not out.exists()
