"""GRPO step time on a free and a busy CPU: torch's default threads against the kit's choice (kit/cpu_threads.py).

    .venv/bin/python bench/cpu_contention.py [--steps 20] [--rounds 2]

The CPU demo's GRPO steps (configs/demo_cpu.yaml, GRPO only), each run a fresh `kit train` process. The
baseline is today's setting before this bench's change, torch's default: one thread per core, spinning
(`cpu_threads=<cores>` reproduces it). The kit's choice is `cpu_threads=auto`. Machine states:

    free           nothing else running
    busy core      `yes > /dev/null` running beside the run from its start
    busy mid-run   `yes` starts after the run's third step (the kit must notice it while it trains)
    two runs       two training processes started together (both with the same setting)

The figure is the median step time (TRL's step_time) after the first step, or after `yes` started; every
ratio is against the baseline on the free machine, measured in the same run. The two sides alternate in
each round, so a machine that slows over the run slows both. Run it alone: anything else running is a
busy core this bench does not know about.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STATES = ("free", "busy core", "busy mid-run", "two runs")
MID_RUN_AFTER = 3  # steps before `yes` starts in "busy mid-run"


def train_command(out: Path, steps: int, threads: str) -> list[str]:
    return [sys.executable, "-m", "kit", "train", "digit_sum", "--config", "configs/demo_cpu.yaml", "--out",
            str(out), "stages=[grpo]", f"grpo.max_steps={steps}", "eval.n=0", "save.formats=[lora]",
            f"grpo.save_steps={steps + 1}", "monitor.samples=0", f"cpu_threads={threads}"]


def start(out: Path, steps: int, threads: str) -> subprocess.Popen:
    log = (out.parent / f"{out.name}.log").open("w")
    return subprocess.Popen(train_command(out, steps, threads), cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


def step_times(out: Path) -> list[float]:
    path = out / "metrics.jsonl"
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r["step_time"] for r in records if "step_time" in r]


def finish(run: subprocess.Popen, out: Path) -> None:
    if run.wait():
        sys.exit(f"{' '.join(map(str, run.args))} failed; its output: {out.parent / (out.name + '.log')}")


def busy_core() -> subprocess.Popen:
    return subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)


def measure(state: str, threads: str, steps: int, folder: Path) -> list[float]:
    """The step times that count for `state`, from one run (two in "two runs": both runs' steps, pooled)."""
    out = folder / f"{state.replace(' ', '-')}-{threads}-{time.monotonic_ns()}"
    if state == "two runs":
        outs = [out.with_name(out.name + f"-{i}") for i in (1, 2)]
        runs = [start(o, steps, threads) for o in outs]
        for run, o in zip(runs, outs):
            finish(run, o)
        return [t for o in outs for t in step_times(o)[1:]]
    other = busy_core() if state == "busy core" else None
    run = start(out, steps, threads)
    skip = 1
    try:
        if state == "busy mid-run":
            while len(step_times(out)) < MID_RUN_AFTER and run.poll() is None:
                time.sleep(0.05)
            skip, other = len(step_times(out)) + 1, busy_core()  # the step under way when it started is mixed
        finish(run, out)
    finally:
        if other:
            other.kill()
            other.wait()
    return step_times(out)[skip:]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    sides = {"default": str(cores), "kit": "auto"}
    times: dict[tuple[str, str], list[float]] = {(s, side): [] for s in STATES for side in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for state in STATES:
                order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
                for side in order:
                    times[state, side] += measure(state, sides[side], args.steps, Path(tmp))
                    print(f"round {round_ + 1}: {state:<13} {side:<8} "
                          f"{statistics.median(times[state, side]):.3f} s/step so far", flush=True)
    baseline = statistics.median(times["free", "default"])
    print(f"\n{args.rounds} rounds x {args.steps} GRPO steps of configs/demo_cpu.yaml, {cores} cores; "
          f"median s/step; ratio to the free machine's default ({baseline:.3f} s/step)\n")
    print("| machine state | default (torch: a thread per core) | ratio | kit (cpu_threads=auto) | ratio | "
          "kit / default |")
    print("| --- | --- | --- | --- | --- | --- |")
    for state in STATES:
        default, kit = (statistics.median(times[state, side]) for side in sides)
        print(f"| {state} | {default:.3f} | {default / baseline:.2f}x | {kit:.3f} | {kit / baseline:.2f}x | "
              f"{kit / default:.2f}x |")


if __name__ == "__main__":
    main()
