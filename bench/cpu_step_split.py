"""Where a GRPO step's time goes on the CPU, and which settings make it faster.

    .venv/bin/python bench/cpu_step_split.py [--steps 10] [--variant "model.dtype=bfloat16"] ...

Runs the kit's own `train` with configs/demo_smollm2.yaml (SmolLM2-135M-Instruct, LoRA, GRPO only) for a
few steps with the trainer's generation and reward calls timed, and prints seconds per step for each
part. Each --variant (config overrides, space-separated) runs the same steps in a fresh process after
the baseline, and its total is printed as a ratio to the baseline's. Run it alone: other processes on
the same cores change every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

TIMED = {"generation": "_generate", "rewards": "_calculate_rewards"}
REST = "log-probs, backward, optimizer"


def time_trainer_calls(spent: dict[str, list[float]]) -> None:
    """Wrap kit.train.stages.grpo.build_trainer so the trainer it builds records each timed call's seconds."""
    from kit.train.stages import grpo

    build = grpo.build_trainer

    def build_and_time(*args, **kwargs):
        trainer = build(*args, **kwargs)
        for part, name in TIMED.items():
            method = getattr(trainer, name)

            def timed(*a, _method=method, _part=part, **k):
                started = time.perf_counter()
                try:
                    return _method(*a, **k)
                finally:
                    spent[_part].append(time.perf_counter() - started)

            setattr(trainer, name, timed)
        return trainer

    grpo.build_trainer = build_and_time


def measure(steps: int, overrides: list[str]) -> dict[str, float]:
    """Seconds per step of each part, the first step (warm-up) left out. Runs in this process."""
    from kit import cli

    spent: dict[str, list[float]] = defaultdict(list)
    time_trainer_calls(spent)
    with tempfile.TemporaryDirectory() as out:
        code = cli.main(["train", "digit_sum", "--config", "configs/demo_smollm2.yaml", "--out", f"{out}/run",
                         "stages=[grpo]", "eval.n=0", "save.formats=[lora]", "monitor.samples=0",
                         f"grpo.max_steps={steps}", *overrides])
        if code:
            raise SystemExit(code)
        logged = [json.loads(line) for line in Path(f"{out}/run/metrics.jsonl").read_text().splitlines()]
    parts = {part: statistics.mean(seconds[1:]) for part, seconds in spent.items()}
    total = statistics.mean([m["step_time"] for m in logged if "step_time" in m][1:])
    return {**parts, REST: total - sum(parts.values()), "total": total}


def measure_in_fresh_process(steps: int, overrides: list[str]) -> dict[str, float]:
    command = [sys.executable, __file__, "--steps", str(steps), "--json", *overrides]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode:
        raise SystemExit(f"{' '.join(overrides) or 'baseline'} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--variant", action="append", default=[], help="config overrides to compare, space-separated")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one measurement, for main()
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.steps, args.overrides)))
        return
    runs = {"baseline (demo settings)": measure_in_fresh_process(args.steps, args.overrides)}
    for variant in args.variant:
        runs[variant] = measure_in_fresh_process(args.steps, [*args.overrides, *variant.split()])
    baseline = runs["baseline (demo settings)"]["total"]
    print(f"\n{args.steps - 1} GRPO steps after a warm-up step, s/step (share of the step)")
    print(f"{'settings':34} {'generation':>14} {REST:>32} {'total':>6} {'vs baseline':>11}")
    for name, parts in runs.items():
        shares = [f"{parts[p]:.2f} ({parts[p] / parts['total']:.0%})" for p in ("generation", REST)]
        print(f"{name:34} {shares[0]:>14} {shares[1]:>32} {parts['total']:6.2f} {parts['total'] / baseline:10.2f}x")


if __name__ == "__main__":
    main()
