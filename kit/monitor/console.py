"""What a training step prints: one short line, not TRL's whole metrics dict (that goes to OUT/metrics.jsonl).

    grpo step 5/40  reward 1.651 ±1.213  field_accuracy 0.529  json_format 0.594  len 30.0  65.7 s/step  ~38 min left
    sft step 4/8  loss 0.617  grad_norm 0.811  lr 0.0002

`python -m kit train ... -v` (make train V=1) prints TRL's dict as well, and every library warning.
"""

from __future__ import annotations

from transformers.trainer_callback import ProgressCallback

from kit.monitor import finish_time
from kit.verbosity import verbose


def step_line(stage: str, step: int, max_steps: int, logs: dict, left: str | None = None) -> str | None:
    """The compact line for one log, or None for a log that is not a training step's (the final summary).
    `left`: the time left as kit.monitor.finish_time says it ("~3 min left"), once the stage has a pace."""
    if "train_runtime" in logs:
        return f"{stage}: {step} steps in {logs['train_runtime']:.1f} s"
    parts = [f"{stage} step {step}/{max_steps}"]
    if "reward" in logs:
        parts.append(f"reward {logs['reward']:.3f} ±{logs.get('reward_std', 0.0):.3f}")
        # a reward that applied to no completion of the step (a judge that did not answer) has no mean: n/a
        parts += [f"{key[len('rewards/'):-len('/mean')]} {'n/a' if value is None else f'{value:.3f}'}"
                  for key, value in logs.items() if key.startswith("rewards/") and key.endswith("/mean")]
        if "kl" in logs:
            parts.append(f"kl {logs['kl']:.4f}")
        if "completions/mean_length" in logs:
            parts.append(f"len {logs['completions/mean_length']:.1f}")
    else:
        parts += [f"{name} {logs[name]:.4g}" for name in ("loss", "grad_norm") if name in logs]
        if "learning_rate" in logs:
            parts.append(f"lr {logs['learning_rate']:.2g}")
    if "step_time" in logs:
        parts.append(f"{logs['step_time']:.1f} s/step")
    if left:
        parts.append(left)
    return "  ".join(parts)


class StepLines(ProgressCallback):
    """transformers' progress bar, with one compact line per logged step in place of the metrics dict."""

    def __init__(self, stage: str):
        super().__init__()
        self.stage = stage

    def on_log(self, args, state, control, logs=None, **kwargs):
        if verbose():
            return super().on_log(args, state, control, logs=logs, **kwargs)
        if state.is_world_process_zero and self.training_bar is not None and logs:
            clock = finish_time.active()
            left = clock.left(state.global_step) if clock else None
            line = step_line(self.stage, state.global_step, state.max_steps, logs, left)
            if line:
                self.training_bar.write(line)


def use_step_lines(trainer, stage: str) -> None:
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(StepLines(stage))
