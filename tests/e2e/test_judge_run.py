"""The concise_helpful recipe trains against llama.cpp's real server; killed mid-run, the judge's failures are said
in words, the run goes on, and when they persist it stops with a checkpoint to resume from."""

import json
import os
import subprocess
import sys
import time

import pytest

from kit.monitor.metrics import read_metrics
from tests.conftest import REPO
from tests.e2e.cli import HANG_GUARD_S, check_run_layout, kit, make
from tests.rewards.judge.servers import free_port, llama_server

pytestmark = pytest.mark.slow


def logged_steps(out) -> list[dict]:
    path = out / "metrics.jsonl"
    return [m for m in read_metrics(path) if "reward" in m] if path.exists() else []


def test_a_judge_killed_mid_run_is_said_and_persisting_failures_stop_the_run(tmp_path):
    port = free_port()
    server = llama_server(port)
    out = tmp_path / "run"
    command = [sys.executable, "-m", "kit", "train", "concise_helpful", "--profile", "smoke", "--out", str(out),
               "grpo.max_steps=12", "grpo.save_steps=100", "eval.n=2", f"judge.base_url=http://127.0.0.1:{port}/v1",
               "judge.failing_steps=3", "judge.retries=1"]
    run = subprocess.Popen(command, cwd=REPO, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    try:
        deadline = time.time() + HANG_GUARD_S
        while len(logged_steps(out)) < 2 and time.time() < deadline:
            assert run.poll() is None, run.communicate()[0][-3000:]
            time.sleep(0.2)
        server.kill()  # mid-run: the judge's endpoint is gone
        output, _ = run.communicate(timeout=HANG_GUARD_S)
    finally:
        server.kill()
        run.kill()
    steps = logged_steps(out)
    answered = [m for m in steps if m["judge/judge_helpful/failed"] == 0]
    failed = [m for m in steps if m["judge/judge_helpful/failed"] > 0.5]  # a repeated completion is cached
    assert len(answered) >= 2 and all(m["judge/judge_helpful/seconds"] > 0 for m in answered), output[-3000:]
    assert len(failed) == 3 and steps[-1] is failed[-1], ("three failing steps in a row, then the stop", steps)
    assert "judgements failed (Connection error." in output and "the run goes on" in output
    diagnostics = [json.loads(line)["code"] for line in (out / "diagnostics.jsonl").read_text().splitlines()]
    assert "judge_failed:judge_helpful" in diagnostics and "judge_down:judge_helpful" in diagnostics
    assert "its endpoint http://127.0.0.1" in output and "is down" in output
    assert run.returncode == 130 and "--resume" in output  # stopped as Ctrl-C stops: a checkpoint, no merge
    assert list((out / "checkpoints").glob("checkpoint-*")) and not (out / "merged").exists()
    record = (out / "run.yaml").read_text()
    assert "kind: llm_judge" in record and f"base_url: http://127.0.0.1:{port}/v1" in record


def test_make_train_with_a_served_judge_then_kit_eval_scores_with_it(tmp_path):
    """The rewards page's three commands (docs/rewards.md): a judge server, `make train RECIPE=concise_helpful`,
    `kit eval`."""
    port = free_port()
    server = llama_server(port)
    try:
        out = tmp_path / "run"
        trained = make("train", "RECIPE=concise_helpful", "PROFILE=smoke", f"OUT={out}",
                       f"ARGS=judge.base_url=http://127.0.0.1:{port}/v1")
        assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr[-3000:]
        check_run_layout(out, steps=2, reward="judge_helpful")
        said = trained.stdout + trained.stderr  # the judge calibrated before it paid; SmolLM2-135M fails: smoke warns
        assert "judge judge_helpful: calibration on 3 cases (failed)" in said, said[-3000:]
        assert "judge.calibration=warn: it pays anyway" in said
        steps = logged_steps(out)
        assert all(m["judge/judge_helpful/failed"] == 0 for m in steps), steps
        evaluated = kit("eval", "concise_helpful", "--model", out / "merged", "--n", "4")  # the run's judge settings
        assert evaluated.returncode == 0, evaluated.stdout[-3000:] + evaluated.stderr[-3000:]
        assert "reward judge_helpful" in evaluated.stdout and "strict accuracy" in evaluated.stdout
    finally:
        server.kill()
