"""Training metrics as JSON lines: `OUT/metrics.jsonl`, one object per logged step, for other tools to read."""

from __future__ import annotations

import json
import math
from pathlib import Path

from transformers import TrainerCallback


class MetricsFile(TrainerCallback):
    """Appends every log TRL makes (reward, reward_std, rewards/<name>/mean, loss, ...) with its step."""

    def __init__(self, path: Path, stage: str = "grpo"):
        self.path = Path(path)
        self.stage = stage

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        record = {"stage": self.stage, "step": state.global_step, **{k: _jsonable(v) for k, v in logs.items()}}
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN / inf; keep them visible as strings
    return value


def read_metrics(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def grpo_steps(records: list[dict]) -> list[dict]:
    """The GRPO steps' records (those logging a reward), each with `run_step`: its step counted across the run.

    Each GRPO stage's trainer counts its steps from 1; with several stages (kit.config.stages), the second
    stage's step 1 follows the first stage's last step on one axis."""
    steps, offset, stage, last = [], 0, None, 0
    for record in records:
        if "reward" not in record:
            continue
        if record.get("stage") != stage:
            offset, stage = offset + last, record.get("stage")
        last = record["step"]
        steps.append({**record, "run_step": offset + record["step"]})
    return steps


def held_out_checks(records: list[dict]) -> list[dict]:
    """The held-out checks made while GRPO trained (kit.train.evaluation.HeldOutCurve), each with the `run_step`
    of the GRPO step it followed, on the reward curve's axis."""
    offsets = {}
    for step in grpo_steps(records):
        offsets.setdefault(step.get("stage"), step["run_step"] - step["step"])
    return [{**r, "run_step": r["step"] + offsets.get(r.get("stage"), 0)} for r in records if "eval/strict" in r]
