"""The CPU demo, shortened: learning must happen, so a change that breaks learning fails CI.

The full demo (`make demo`, configs/demo_cpu.yaml) runs 150 SFT + 300 GRPO steps; this runs the same
config with 150 GRPO steps and asserts that (1) the correctness reward is higher over the last fifth
of GRPO steps than over the first fifth and (2) held-out strict accuracy after GRPO is at least what
it was after SFT.
"""

import json

import pytest

from kit.monitor.metrics import read_metrics
from tests.e2e.cli import HANG_GUARD_S, kit_train

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # it learns with every core, as `make demo` does


def test_shortened_demo_learns(tmp_path):
    out = tmp_path / "demo"
    result = kit_train("digit_sum", "--config", "configs/demo_cpu.yaml", "--out", out, "grpo.max_steps=150",
                       "save.formats=[merged_16bit]", timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    steps = [m for m in read_metrics(out / "metrics.jsonl") if m.get("stage") == "grpo" and "reward" in m]
    assert len(steps) == 150
    fifth = len(steps) // 5
    first = sum(m["rewards/answer_correct/mean"] for m in steps[:fifth]) / fifth
    last = sum(m["rewards/answer_correct/mean"] for m in steps[-fifth:]) / fifth
    assert last > first, f"GRPO did not raise the correctness reward: first fifth {first:.3f}, last fifth {last:.3f}"
    results = {r["name"]: r for r in json.loads((out / "eval.json").read_text())["results"]}
    assert list(results) == ["before", "after sft", "after grpo"]
    assert results["after sft"]["format_compliance"] > 0.9, "the SFT warm start did not teach the format"
    assert results["after grpo"]["strict_accuracy"] >= results["after sft"]["strict_accuracy"]
    assert (out / "plots" / "run.png").stat().st_size > 10_000
    assert (out / "merged" / "model.safetensors").exists() and not (out / "adapter").exists()
