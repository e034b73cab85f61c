"""The learnability check end to end: `kit check` on the random tiny model, and `kit train` after the demo's SFT
warm start (configs/demo_cpu.yaml, shortened), as a user runs them."""

import yaml

from kit.outputs import RunDir
from tests.e2e.cli import kit, kit_train


def test_kit_check_says_the_random_tiny_model_has_nothing_to_learn_from():
    result = kit("check", "digit_sum", "--profile", "smoke")
    assert result.returncode == 0, result.stderr[-3000:]
    assert ("learnability: 6 of 6 groups score alike on answer_correct: GRPO has nothing to learn from; warm start "
            "with SFT (`stages: [sft, grpo]`)") in result.stdout


def test_after_the_demos_warm_start_groups_differ(tmp_path):
    out = tmp_path / "run"
    result = kit_train("digit_sum", "--config", "configs/demo_cpu.yaml", "--out", out, "sft.max_steps=60",
                       "grpo.max_steps=1", "eval.n=16", "eval.every_steps=0", "save.formats=[]")
    assert result.returncode == 0, result.stderr[-3000:]
    section = yaml.safe_load(RunDir(out).run_file.read_text())["learnability"]
    assert section["warm_started"] is True
    assert section["learns"] is True, section
    assert "GRPO has something to learn from" in result.stdout
