"""Two training processes against one: GRPO completions per second of the tiny model through `kit train`.

    .venv/bin/python bench/multi_process.py [--steps 60] [--processes 2]

The same command, per-process batch and step count run once as a single process (the baseline, the
Unsloth path) and once with --num-processes N (accelerate launch, DDP; gloo on CPU), in this run. Each
step of the N-process run holds N times the completions. The time is TRL's train_runtime (the
training loop: generation, rewards, backward, all-reduce), so loading and saving are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kit.config import build_config, read_yaml

REPO = Path(__file__).resolve().parent.parent


def train(out: Path, steps: int, processes: int) -> dict:
    command = [sys.executable, "-m", "kit", "train", "gsm8k", "--profile", "smoke", "--out", str(out),
               "--steps", str(steps), "--num-processes", str(processes), "eval.n=0", "save.formats=[lora]",
               f"grpo.save_steps={steps + 1}", "monitor.samples=0"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    logs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    seconds = next(m["train_runtime"] for m in logs if "train_runtime" in m)
    cfg = build_config([read_yaml(out / "run.yaml")])
    return {"seconds": float(seconds), "completions": steps * cfg.completions_per_step}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one = train(Path(tmp) / "one", args.steps, 1)
        many = train(Path(tmp) / "many", args.steps, args.processes)
    rates = {label: r["completions"] / r["seconds"] for label, r in (("one", one), ("many", many))}
    print(f"1 process (baseline)   {one['seconds']:6.1f} s  {one['completions']:5d} completions  "
          f"{rates['one']:6.1f} completions/s")
    print(f"{args.processes} processes (DDP)     {many['seconds']:6.1f} s  {many['completions']:5d} completions  "
          f"{rates['many']:6.1f} completions/s")
    print(f"{args.processes} processes / baseline: {rates['many'] / rates['one']:.2f}x completions per second "
          f"({args.steps} steps, {os.cpu_count()} CPU cores)")


if __name__ == "__main__":
    main()
