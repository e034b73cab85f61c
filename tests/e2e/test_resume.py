"""Interrupt a run (SIGTERM, kill -9, a failure), then start or resume it: it reaches the planned step count.

Also: one run per OUT, checkpoints cut short are skipped, a finished run is not trained further.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from safetensors.torch import load_file

from kit.monitor.metrics import read_metrics
from tests.conftest import COUNT_RECIPE, REPO
from tests.e2e import cli
from tests.e2e.cli import HANG_GUARD_S, plain_generate

pytestmark = pytest.mark.slow

STEPS = 12


def start(recipe, out, *extra):
    command = [sys.executable, "-m", "kit", "train", str(recipe), "--profile", "smoke", "--out", str(out),
               f"grpo.max_steps={STEPS}", "grpo.save_steps=2", "grpo.learning_rate=0.01", "eval.n=4",
               "data.path=null", "eval.split=test", *extra]
    return subprocess.Popen(command, cwd=REPO, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_for_step(out, step, process, timeout=HANG_GUARD_S, stage=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        path = out / "metrics.jsonl"
        if path.exists() and any(m.get("step", 0) >= step and stage in (None, m.get("stage"))
                                 for m in read_metrics(path)):
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
    stdout, stderr = process.communicate(timeout=HANG_GUARD_S)
    assert process.returncode == 130, stdout[-2000:] + stderr[-2000:]
    assert "SIGTERM received: saving a checkpoint" in stdout and "--resume" in stderr
    checkpoints = sorted((out / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    stopped_at = int(checkpoints[-1].name.split("-")[1])
    assert 3 <= stopped_at < STEPS and not (out / "merged").exists()
    interrupted = load_file(checkpoints[-1] / "adapter_model.safetensors")

    resumed = subprocess.run([sys.executable, "-m", "kit", "train", str(recipe), "--out", str(out), "--resume"],
                             cwd=REPO, env=dict(os.environ), capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"resume: continuing GRPO from {checkpoints[-1]}" in resumed.stdout
    steps = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m]
    assert steps == list(range(1, STEPS + 1)), "each planned step logged exactly once"
    final = load_file(out / "adapter" / "adapter_model.safetensors")
    assert any(not final[k].equal(interrupted[k]) for k in final), "resumed training did not change the adapter"
    state = out / "checkpoints" / f"checkpoint-{STEPS}" / "trainer_state.json"
    assert json.loads(state.read_text())["global_step"] == STEPS
    assert len(list((out / "checkpoints").glob("checkpoint-*"))) <= 2  # grpo.save_total_limit
    names = [r["name"] for r in json.loads((out / "eval.json").read_text())["results"]]
    assert names == ["before", "after"], "the resumed run keeps the first run's 'before' evaluation"
    assert (out / "report.md").exists()


def test_sigterm_in_the_second_grpo_stage_resumes_in_that_stage(tmp_path):
    """The guide's curriculum as two GRPO stages: a stop in the second resumes there, the first is not retrained."""
    recipe = tmp_path / "count.py"
    recipe.write_text(COUNT_RECIPE)
    out = tmp_path / "run"
    process = start(recipe, out, "stages=[{grpo: {name: first, max_steps: 4}}, {grpo: {name: second}}]")
    wait_for_step(out, 3, process, stage="second")
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=HANG_GUARD_S)
    assert process.returncode == 130, stdout[-2000:] + stderr[-2000:]
    assert (out / "checkpoints" / "first" / "checkpoint-4").is_dir()  # a stage that another follows saves its end
    stopped = max(int(p.name.split("-")[1]) for p in (out / "checkpoints" / "second").glob("checkpoint-*"))

    resumed = cli.kit_train(recipe, "--out", out, "--resume")
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"resume: continuing GRPO stage second from {out / 'checkpoints' / 'second'}/checkpoint-{stopped}" \
        in resumed.stdout
    steps = [(m["stage"], m["step"]) for m in read_metrics(out / "metrics.jsonl") if "reward" in m]
    assert steps == [("first", s) for s in range(1, 5)] + [("second", s) for s in range(1, STEPS + 1)]
    names = [r["name"] for r in json.loads((out / "eval.json").read_text())["results"]]
    assert names == ["before", "after first", "after second"]


def kit_train(recipe, out, *extra, env_extra=None):
    return cli.kit_train(recipe, "--out", out, *extra, env_extra=env_extra)


def wait_for(path, process, timeout=HANG_GUARD_S):
    deadline = time.time() + timeout
    while not path.exists():
        assert time.time() < deadline, f"{path} never appeared"
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory, tiny_model):
    """A run killed with -9 after its second checkpoint; meanwhile a second run into its OUT was tried."""
    tmp_path = tmp_path_factory.mktemp("killed")
    recipe = tmp_path / "count.py"
    recipe.write_text(COUNT_RECIPE)
    out = tmp_path / "run"
    process = start(recipe, out)
    wait_for_step(out, 1, process)
    process.send_signal(signal.SIGSTOP)  # paused, holding OUT, however long the second run takes to start
    try:
        second = kit_train(recipe, out, "--profile", "smoke", f"grpo.max_steps={STEPS}")
    finally:
        process.send_signal(signal.SIGCONT)
    wait_for(out / "checkpoints" / "checkpoint-4" / "trainer_state.json", process)
    process.kill()  # SIGKILL: no handler runs, nothing is tidied
    process.communicate()
    assert not (out / "merged").exists(), "the run finished before it was killed"
    return recipe, out, process.pid, second


def test_a_second_run_into_the_same_out_is_refused(killed_run):
    _, out, pid, second = killed_run
    assert second.returncode == 2, second.stdout[-2000:] + second.stderr[-2000:]
    assert second.stderr.strip().splitlines()[-1] == (f"error: {out} is in use by another run (process {pid}); "
                                                      "wait for it to end, or choose another OUT")


@pytest.fixture(scope="module")
def resumed_run(killed_run):
    """The killed run resumed, with its newest complete checkpoint cut short and a merge's temporary folder left."""
    recipe, out, _, _ = killed_run
    complete = [p for p in (out / "checkpoints").glob("checkpoint-*") if (p / "trainer_state.json").exists()]
    newest = max(complete, key=lambda p: int(p.name.split("-")[1]))
    weights = newest / "adapter_model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)  # as a full disk leaves it
    (out / ".merged.partial-k9").mkdir()  # as kill -9 during the merge leaves it
    resumed = kit_train(recipe, out, "--resume")
    return out, newest, resumed


def test_kill_9_then_resume_finishes_the_plan(resumed_run):
    out, _, resumed = resumed_run
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    steps = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m]
    assert steps == list(range(1, STEPS + 1)), "each planned step logged exactly once"
    assert plain_generate(out / "merged")["new_tokens"] > 0, "the merged model loads and generates"
    assert not [p.name for p in out.rglob("*") if ".partial-" in p.name], "a temporary folder was left behind"


def test_resume_skips_a_checkpoint_cut_short(resumed_run):
    _, broken, resumed = resumed_run
    assert (f"resume: skipping {broken}: incomplete, adapter_model.safetensors is cut short" in resumed.stdout)
    continued = int(resumed.stdout.split("resume: continuing GRPO from ")[1].split()[0].split("-")[-1])
    assert continued < int(broken.name.split("-")[1])


def test_resuming_a_finished_run_is_refused(resumed_run):
    out, _, _ = resumed_run
    recipe = out.parent / "count.py"
    again = kit_train(recipe, out, "--resume")
    assert again.returncode == 2, again.stdout[-2000:] + again.stderr[-2000:]
    last = again.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {out} is finished: all {STEPS} planned GRPO steps are trained") and \
        str(out / "merged") in last
    assert [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m] == list(range(1, STEPS + 1))
    assert not (out / "checkpoints" / f"checkpoint-{STEPS + 1}").exists(), "trained past the plan"


FLAKY_RECIPE = COUNT_RECIPE + textwrap.dedent(
    """
    import os

    from kit.rewards.text import completion_text

    def fails_when_asked(completions, **kwargs):
        # on the model's output, after the run has started (the kit's trial call before it sends empty text)
        if os.environ.get("KIT_TEST_FAIL") and any(completion_text(c) for c in completions):
            raise RuntimeError("reward failed on purpose")
        return [0.0] * len(completions)

    REWARDS = RewardBundle((digits, 1.0), (fails_when_asked, 0.1))
    """
)


def test_a_run_that_failed_before_its_first_checkpoint_can_be_retried(tmp_path, tiny_model):
    recipe = tmp_path / "flaky.py"
    recipe.write_text(FLAKY_RECIPE)
    out = tmp_path / "run"
    settings = ["--profile", "smoke", "grpo.max_steps=2", "eval.n=0", "data.path=null"]
    failed = kit_train(recipe, out, *settings, env_extra={"KIT_TEST_FAIL": "1"})
    assert failed.returncode != 0 and "reward failed on purpose" in failed.stderr
    assert (out / "run.yaml").exists() and not list((out / "checkpoints").glob("checkpoint-*"))
    retried = kit_train(recipe, out, *settings)
    assert retried.returncode == 0, retried.stdout[-2000:] + retried.stderr[-2000:]
    assert "holds a run that stopped before its first checkpoint" in retried.stdout
    assert [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m] == [1, 2]


def test_a_run_killed_after_training_writes_its_outputs_on_resume(resumed_run):
    out, _, _ = resumed_run
    shutil.rmtree(out / "merged")
    (out / "report.md").unlink()  # as kill -9 during the merge leaves the run: trained, not saved
    (out / ".merged.partial-k9").mkdir()
    finished = kit_train(out.parent / "count.py", out, "--resume")
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    assert f"checkpoint-{STEPS} holds every planned step" in finished.stdout
    assert [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m] == list(range(1, STEPS + 1))
    assert not (out / "checkpoints" / f"checkpoint-{STEPS + 1}").exists(), "trained past the plan"
    assert (out / "merged" / "model.safetensors").exists() and not (out / ".merged.partial-k9").exists()
