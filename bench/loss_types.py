"""Held-out accuracy after GRPO with each loss type, on the real-model CPU demo (`make demo-real`'s training).

    .venv/bin/python bench/loss_types.py [--seeds 3407 1] [--losses dapo grpo dr_grpo gspo] [--steps N]
                                         [--out DIR] [--set key=value ...]

Each run is `kit train addition --config configs/demo_smollm2.yaml` (SmolLM2-135M-Instruct: 10 SFT steps, then
100 GRPO steps) with grpo.loss_type and the seed set, saving the adapter alone: the demo's merge and GGUF export
are not what is compared. One run at a time, the losses alternating within each seed (seed 3407: dapo, grpo,
dr_grpo, gspo; then seed 1: the same order), so a machine that slows during the bench slows every loss alike.

The table has each run's held-out strict accuracy (greedy, every held-out pair) before training, after SFT and
after GRPO (OUT/eval.json), the GRPO gain (after GRPO against after SFT), the GRPO stage's wall time (OUT/report.md's
timings: trainer built, steps, checkpoints), then each loss's mean over its seeds. A run takes ~12 minutes on
2 cores (BENCHMARKS.md), so the full bench, 4 losses x 2 seeds, takes about 2 hours: run it alone. --steps and
--set shrink every run, to check the bench itself in minutes (its numbers are then no comparison):

    .venv/bin/python bench/loss_types.py --losses dapo gspo --seeds 1 --steps 2 --set sft.max_steps=2 eval.n=20
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kit.config.schema import choices
from kit.config.sections import GRPOSection
from kit.outputs import RunDir

REPO = Path(__file__).resolve().parent.parent
CONFIG = "configs/demo_smollm2.yaml"
LOSSES = ("dapo", "grpo", "dr_grpo", "gspo")
SEEDS = (3407, 1)
GRPO_TIMING = re.compile(r"^- grpo training: ([0-9.]+) s$", re.MULTILINE)  # a line of report.md's timings


@dataclass(frozen=True)
class Result:
    """One run's figures, or (seed "mean of N") a loss's mean over its runs; None where the run gave none."""

    loss: str
    seed: int | str
    before: float | None  # held-out strict accuracy, 0-1
    after_sft: float | None
    after_grpo: float | None
    grpo_seconds: float | None

    @property
    def gain(self) -> float | None:
        """GRPO's own gain: after GRPO against after SFT (against before, in a run without SFT)."""
        start = self.after_sft if self.after_sft is not None else self.before
        return None if start is None or self.after_grpo is None else self.after_grpo - start


def run_order(seeds: list[int], losses: list[str]) -> list[tuple[int, str]]:
    """Seed by seed, every loss once in the order given: the losses alternate, never all of one loss first."""
    return [(seed, loss) for seed in seeds for loss in losses]


def train_command(out: Path, loss: str, seed: int, steps: int | None, overrides: list[str]) -> list[str]:
    command = [sys.executable, "-m", "kit", "train", "addition", "--config", CONFIG, "--out", str(out),
               f"grpo.loss_type={loss}", f"seed={seed}", "save.formats=[lora]"]
    return command + ([f"grpo.max_steps={steps}"] if steps else []) + overrides  # the user's overrides last: they win


def read_run(out: Path, loss: str, seed: int) -> Result:
    """The run's held-out scores (eval.json) and GRPO wall time (report.md); None for what it did not write."""
    run = RunDir(out)
    results = json.loads(run.eval.read_text())["results"] if run.eval.exists() else []
    strict = {r["name"]: r["strict_accuracy"] for r in results}
    timing = GRPO_TIMING.search(run.report.read_text()) if run.report.exists() else None
    after_grpo = strict.get("after grpo", strict.get("after"))  # "after" alone: a run of one stage
    return Result(loss, seed, strict.get("before"), strict.get("after sft"), after_grpo,
                  float(timing.group(1)) if timing else None)


def mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def loss_means(results: list[Result], losses: list[str]) -> list[Result]:
    """Each loss's mean over its runs, in the order of `losses`."""
    means = []
    for loss in losses:
        runs = [r for r in results if r.loss == loss]
        if runs:
            means.append(Result(loss, f"mean of {len(runs)}", mean([r.before for r in runs]),
                                mean([r.after_sft for r in runs]), mean([r.after_grpo for r in runs]),
                                mean([r.grpo_seconds for r in runs])))
    return means


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def table(results: list[Result], losses: list[str]) -> list[str]:
    """The runs in the order they ran, then each loss's mean."""
    lines = ["| loss | seed | strict: before | after SFT | after GRPO | GRPO gain | GRPO wall time |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in [*results, *loss_means(results, losses)]:
        gain = "-" if r.gain is None else f"{100 * r.gain:+.1f}"
        seconds = "-" if r.grpo_seconds is None else f"{r.grpo_seconds:.0f} s"
        lines.append(f"| {r.loss} | {r.seed} | {percent(r.before)} | {percent(r.after_sft)} | "
                     f"{percent(r.after_grpo)} | {gain} | {seconds} |")
    return lines


def settings_differ(out: Path, command: list[str]) -> str:
    """Which key=value of `command` the run in `out` (its run.yaml) did not train with; "" when it did."""
    import yaml

    record = yaml.safe_load(RunDir(out).run_file.read_text()) if RunDir(out).run_file.exists() else {}
    differs = []
    for setting in (part for part in command if "=" in part and not part.startswith("save.")):
        key, value = setting.split("=", 1)
        found = record
        for part in key.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        if found != yaml.safe_load(value):
            differs.append(f"{key}: {found!r} there, {value} here")
    return "; ".join(differs)


def train(command: list[str], out: Path) -> None:
    log = out.parent / f"{out.name}.log"
    with log.open("w") as sink:
        if subprocess.run(command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT).returncode:
            sys.exit(f"{' '.join(command)} failed; its output: {log}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--losses", nargs="+", default=list(LOSSES), choices=choices(GRPOSection, "loss_type"))
    parser.add_argument("--steps", type=int, help="GRPO steps per run (default: the demo's 100)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="config overrides for every run, e.g. sft.max_steps=2 eval.n=20")
    parser.add_argument("--out", type=Path, help="keep each run's folder (and .log) here, where a later bench with "
                        "the same --out reads the finished ones instead of training them again; default: a "
                        "temporary folder, removed at the end")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    order = run_order(args.seeds, args.losses)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for index, (seed, loss) in enumerate(order, 1):
            out = folder / f"{loss}-seed{seed}"
            started = time.perf_counter()
            if out.exists():  # a bench stopped part-way goes on: its finished runs are read, not trained again
                if read_run(out, loss, seed).after_grpo is None:
                    sys.exit(f"{out} exists but holds no finished run (no held-out score after GRPO): move it away")
                differs = settings_differ(out, train_command(out, loss, seed, args.steps, args.overrides))
                if differs:
                    sys.exit(f"{out} was trained with other settings ({differs}): move it away, or use another --out")
                how = f"read from {out}, not trained again"
            else:
                train(train_command(out, loss, seed, args.steps, args.overrides), out)
                how = f"{time.perf_counter() - started:.0f} s"
            results.append(read_run(out, loss, seed))
            print(f"run {index}/{len(order)}: {loss}, seed {seed}, {how}: strict after GRPO "
                  f"{percent(results[-1].after_grpo)}", flush=True)
    steps = f"{args.steps} GRPO steps" if args.steps else "the demo's GRPO steps"
    print(f"\n{CONFIG}, {steps}, {' '.join(args.overrides) or 'no other overrides'}; held-out strict accuracy "
          "(greedy); one run at a time\n")
    print("\n".join(table(results, args.losses)))


if __name__ == "__main__":
    main()
