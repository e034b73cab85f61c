"""Two "machines" on this host: two `kit train` commands, each with one CPU process (gloo), meet at 127.0.0.1.
The shipped sbatch script, under a stand-in srun, trains one model, which only the main machine writes; a failure
on one machine is named on both; SIGTERM on the main machine stops both after one checkpoint."""

import json
import os
import signal
import subprocess
import sys

import pytest

from kit.monitor.metrics import read_metrics
from tests.e2e.cli import HANG_GUARD_S, REPO, check_run_layout
from tests.e2e.test_multi_process import FAILING_RECIPE
from tests.e2e.test_resume import wait_for_step

pytestmark = pytest.mark.slow

STEPS = 2


class Machine:
    """One machine's `kit train`, its console (stdout and stderr) in a file: a pipe nobody reads would fill."""

    def __init__(self, rank: int, out, port: int, recipe: str = "digit_sum", *settings: str, resume: bool = False):
        self.log = out.parent / f"machine{rank}{'-resumed' if resume else ''}.log"
        run = ["--resume"] if resume else ["--profile", "smoke", "--num-processes", "1", f"grpo.max_steps={STEPS}"]
        command = [sys.executable, "-m", "kit", "train", recipe, "--out", str(out), *run, "launch.num_machines=2",
                   f"launch.machine_rank={rank}", "launch.main_address=127.0.0.1", f"launch.main_port={port}",
                   *settings]
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True,
                                            env={**os.environ, "PYTHONPATH": str(REPO)})

    def wait(self) -> tuple[int, str]:
        self.process.wait(timeout=HANG_GUARD_S)
        return self.process.returncode, self.log.read_text()


def run_machines(out, *args) -> tuple[list[int], list[str]]:
    port = free_port()
    ended = [machine.wait() for machine in [Machine(rank, out, port, *args) for rank in (0, 1)]]
    return [code for code, _ in ended], [log for _, log in ended]


def free_port() -> int:
    from kit.train.launch.launcher import free_port as pick

    return pick()


def test_a_machine_without_the_main_address_is_refused_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "kit", "train", "digit_sum", "--profile", "smoke", "--out",
                             str(tmp_path / "run"), "launch.num_machines=2", "launch.machine_rank=1"],
                            cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD_S)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode != 0 and len(errors) == 1, result.stderr[-2000:]
    assert "machine 1 of 2: launch.num_machines=2 needs the main machine's address" in errors[0]
    assert not (tmp_path / "run").exists()


def test_a_failure_on_machine_1_stops_both_and_each_names_it(tmp_path):
    recipe = tmp_path / "failing_rank.py"
    recipe.write_text(FAILING_RECIPE)  # its reward raises in rank 1, the process on machine 1
    out = tmp_path / "run"
    codes, logs = run_machines(out, str(recipe), "eval.n=0")
    assert 0 not in codes, logs[0][-3000:] + logs[1][-3000:]
    stopped = ("error: the run stopped: rank 1 (machine 1): reward 'fails_in_rank_1' raised RuntimeError: reward "
               "failed on purpose")
    for log in logs:
        assert stopped in log, log[-3000:]
    assert "rank 1's messages are on machine 1's console (this is machine 0)" in logs[0]
    assert "rank 1's messages are above" in logs[1]
    assert not (out / "merged").exists()


def test_sigterm_on_the_main_machine_saves_one_checkpoint_and_both_resume_from_it(tmp_path):
    out, port, planned = tmp_path / "run", free_port(), 12
    machines = [Machine(rank, out, port, "digit_sum", f"grpo.max_steps={planned}", "grpo.save_steps=1000", "eval.n=0")
                for rank in (0, 1)]
    wait_for_step(out, 2, machines[0].process)
    machines[0].process.send_signal(signal.SIGTERM)  # as a scheduler or `kill` would: the main machine's launcher
    (main_code, main_log), (other_code, other_log) = [machine.wait() for machine in machines]
    assert (main_code, other_code) == (130, 130), main_log[-3000:] + other_log[-3000:]
    assert "SIGTERM received: saving a checkpoint" in main_log
    assert "on every machine with its own NODE_RANK" in main_log  # how to go on, said where it is read
    assert "stopped on a request to stop" in other_log and "the main machine" in other_log
    checkpoints = list((out / "checkpoints").glob("checkpoint-*"))
    assert len(checkpoints) == 1, checkpoints
    stopped = int(checkpoints[0].name.split("-")[1])
    assert 2 <= stopped < planned and not (out / "merged").exists()

    port = free_port()  # each machine resumes with its own rank; run.yaml, the main machine's, names rank 0
    resumed = [machine.wait() for machine in [Machine(rank, out, port, "digit_sum", resume=True) for rank in (0, 1)]]
    assert [code for code, _ in resumed] == [0, 0], resumed[0][1][-3000:] + resumed[1][1][-3000:]
    assert f"resume: continuing GRPO from {checkpoints[0]}" in resumed[0][1]
    assert [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m] == list(range(1, planned + 1))
    report = json.loads((out / "distributed.json").read_text())
    assert [(r["machine"], r["last_step"]) for r in report["ranks"]] == [(0, planned), (1, planned)]
    assert (out / "merged" / "config.json").exists()


# srun for two machines on one host: each task gets the variables SLURM gives it, its console in a file.
STAND_IN_SRUN = """#!/bin/bash
while [[ $1 == --* ]]; do shift; done
pids=()
for node in 0 1; do
    SLURM_NODEID=$node SLURM_PROCID=$node "$@" > "$SRUN_LOGS/task$node.log" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
"""


def test_the_shipped_sbatch_script_trains_one_model_across_two_machines(tmp_path):
    bin_dir, out = tmp_path / "bin", tmp_path / "run"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(STAND_IN_SRUN)
    (bin_dir / "srun").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO), "SRUN_LOGS": str(tmp_path),
           "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "127.0.0.1", "SLURM_JOB_ID": "77",
           "PYTHON": sys.executable, "RECIPE": "digit_sum", "NPROC": "1", "OUT": str(out)}
    result = subprocess.run(["bash", "docs/slurm/grpo.sbatch", f"grpo.max_steps={STEPS}",
                             f"launch.main_port={free_port()}"], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=HANG_GUARD_S)
    logs = [(tmp_path / f"task{node}.log").read_text() for node in (0, 1)]
    assert result.returncode == 0, logs[0][-3000:] + logs[1][-3000:]
    assert "on machine 1 of 2 (main: 127.0.0.1)" in logs[1]  # SLURM's variables, read by each machine
    assert "done in " in logs[0] and "done in " not in logs[1]  # the main machine's rank 0 alone reports

    check_run_layout(out, STEPS)  # one run's files: one merged model, each step logged once
    report = json.loads((out / "distributed.json").read_text())
    assert [(r["rank"], r["machine"]) for r in report["ranks"]] == [(0, 0), (1, 1)]
    first, second = report["ranks"]
    assert first["optimizer_steps"] == second["optimizer_steps"] == STEPS
    assert first["trainable_norm_end"] == second["trainable_norm_end"] != first["trainable_norm_start"]  # DDP
