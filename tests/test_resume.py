"""Interrupt a run with SIGTERM, then resume it: it reaches the planned step count, and training went on."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from safetensors.torch import load_file

from kit.metrics import read_metrics
from tests.conftest import COUNT_RECIPE, REPO

pytestmark = pytest.mark.slow

STEPS = 12


def start(recipe, out, *extra):
    command = [sys.executable, "-m", "kit", "train", str(recipe), "--profile", "smoke", "--out", str(out),
               f"grpo.max_steps={STEPS}", "grpo.save_steps=2", "grpo.learning_rate=0.01", "eval.n=4",
               "data.path=null", "eval.split=test", *extra]
    return subprocess.Popen(command, cwd=REPO, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_for_step(out, step, process, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        path = out / "metrics.jsonl"
        if path.exists() and any(m.get("step", 0) >= step for m in read_metrics(path)):
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.2)
    raise AssertionError(f"step {step} never logged")


def test_sigterm_saves_and_resume_finishes(tmp_path):
    recipe = tmp_path / "count.py"
    recipe.write_text(COUNT_RECIPE)
    out = tmp_path / "run"
    process = start(recipe, out)
    wait_for_step(out, 3, process)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stdout[-2000:] + stderr[-2000:]
    assert "SIGTERM received: saving a checkpoint" in stdout and "--resume" in stderr
    checkpoints = sorted((out / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    stopped_at = int(checkpoints[-1].name.split("-")[1])
    assert 3 <= stopped_at < STEPS and not (out / "merged").exists()
    interrupted = load_file(checkpoints[-1] / "adapter_model.safetensors")

    resumed = subprocess.run([sys.executable, "-m", "kit", "train", str(recipe), "--out", str(out), "--resume"],
                             cwd=REPO, env=dict(os.environ), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"resume: continuing GRPO from {checkpoints[-1]}" in resumed.stdout
    steps = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m]
    assert steps == list(range(1, STEPS + 1)), "each planned step logged exactly once"
    final = load_file(out / "adapter" / "adapter_model.safetensors")
    assert any(not final[k].equal(interrupted[k]) for k in final), "resumed training did not change the adapter"
    assert json.loads((out / "checkpoints" / f"checkpoint-{STEPS}" / "trainer_state.json").read_text())["global_step"] == STEPS
    assert len(list((out / "checkpoints").glob("checkpoint-*"))) <= 2  # grpo.save_total_limit
    names = [r["name"] for r in json.loads((out / "eval.json").read_text())["results"]]
    assert names == ["before", "after"], "the resumed run keeps the first run's 'before' evaluation"
    assert (out / "report.md").exists()
