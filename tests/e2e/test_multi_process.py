"""Real multi-process runs on this CPU: `make train NPROC=2` starts two ranks (gloo) through accelerate launch."""

import json
import textwrap

import pytest

from kit.monitor.metrics import read_metrics
from tests.e2e.cli import HANG_GUARD_S, check_run_layout, kit_train, make, plain_generate

pytestmark = pytest.mark.slow

STEPS = 2
# The smoke profile's GRPO batch: 4 completions per rank and step, 4 generations per prompt.
PER_RANK, NUM_GENERATIONS = 4, 4


def make_train(*variables, timeout=HANG_GUARD_S):
    return make("train", *variables, timeout=timeout)


def test_make_train_with_two_processes(tmp_path):
    out = tmp_path / "run"
    result = make_train("RECIPE=gsm8k", "NPROC=2", f"OUT={out}", f"STEPS={STEPS}")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "launch: 2 processes with ddp" in result.stdout

    cfg = check_run_layout(out, STEPS)  # one run's files, each step logged once (rank 0 alone writes)
    assert cfg.launch.num_processes == 2 and cfg.completions_per_step == 2 * PER_RANK
    assert f"2 prompt(s) x {NUM_GENERATIONS} generations = {2 * PER_RANK} completions per step" in result.stdout
    assert result.stdout.count("done in ") == 1  # the other rank prints nothing

    report = json.loads((out / "distributed.json").read_text())
    assert report["num_processes"] == 2 and report["backend"] == "gloo" and report["launcher"] == "ddp"
    assert [r["rank"] for r in report["ranks"]] == [0, 1]
    for rank in report["ranks"]:
        assert rank["optimizer_steps"] == STEPS
        assert rank["completions_per_step"] == [PER_RANK] * STEPS  # each rank scored its share of every step
        assert rank["trainable_norm_end"] != rank["trainable_norm_start"]  # its adapter moved
    # DDP averaged the gradients: both ranks end with the same adapter
    ends = [r["trainable_norm_end"] for r in report["ranks"]]
    assert ends[0] == pytest.approx(ends[1], rel=1e-6)

    report_md = (out / "report.md").read_text()
    assert "## Processes" in report_md and f"| 1 | cpu | {STEPS} | {PER_RANK} |" in report_md

    assert sorted(p.name for p in out.iterdir() if p.is_dir() and (p / "config.json").exists()) == ["merged"]
    assert plain_generate(out / "merged")["new_tokens"] > 0
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["step"] for s in samples] == [1] * cfg.monitor.samples  # step 1's samples, written once, not per rank


def test_two_process_run_resumes_from_its_checkpoint(tmp_path):
    out = tmp_path / "run"
    first = kit_train("gsm8k", "--num-processes", "2", "--out", str(out), "--steps", "2", "grpo.save_steps=1",
                      "eval.n=4")
    assert first.returncode == 0, first.stderr[-3000:]
    # the resumed run reads launch.num_processes from OUT/run.yaml and starts two processes again
    resumed = kit_train("gsm8k", "--out", str(out), "--resume", "--steps", "3")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "launch: 2 processes" in resumed.stdout and "checkpoint-2" in resumed.stdout
    assert [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m] == [1, 2, 3]
    report = json.loads((out / "distributed.json").read_text())
    assert [(r["optimizer_steps"], r["last_step"]) for r in report["ranks"]] == [(1, 3), (1, 3)]
    # the first run's "before" score is kept beside the resumed run's "after" score
    assert [r["name"] for r in json.loads((out / "eval.json").read_text())["results"]] == ["before", "after"]


FAILING_RECIPE = textwrap.dedent(
    """
    import os

    from kit.rewards import Reward, RewardBundle
    from kit.recipes.gsm8k import DEFAULTS, EVAL, REWARDS, prepare, write_sample  # noqa: F401


    def fails_in_rank_1(completions, **kwargs):
        if os.environ.get("RANK") == "1":
            raise RuntimeError("reward failed on purpose in rank 1")
        return [0.0] * len(completions)


    REWARDS = RewardBundle(*REWARDS.rewards, Reward(fails_in_rank_1, 0.1))
    """
)


def test_one_failing_rank_stops_the_run_and_is_named(tmp_path):
    recipe = tmp_path / "failing_rank.py"
    recipe.write_text(FAILING_RECIPE)
    out = tmp_path / "run"
    result = kit_train(str(recipe), "--num-processes", "2", "--out", str(out), "eval.n=0")
    assert result.returncode != 0
    stopped = "error: the run stopped: rank 1: reward 'fails_in_rank_1' raised RuntimeError: reward failed on purpose"
    assert stopped in result.stderr
    assert not (out / "merged").exists() and not (out / "adapter").exists()
    assert not (out / "metrics.jsonl").exists() or not read_metrics(out / "metrics.jsonl")
