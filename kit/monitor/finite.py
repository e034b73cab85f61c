"""A run that goes non-finite stops at that step, with the setting to change.

TRL trains on through a nan loss (every later step is nan too), prints its metrics, finishes, and the merge
then writes a model whose weights are nan: "done" with nothing usable. `FiniteGuard` checks the logged loss
and gradient norm, and every trained weight after each optimizer step, and raises instead.

With fp16 mixed precision (a T4, and any GPU without bfloat16) an infinite gradient norm is how loss scaling works:
the scaler skips that step and halves its scale, often in the first steps. The guard lets a few such steps in a row
pass, and stops only when scaling finds no finite gradient at all.
"""

from __future__ import annotations

import math

from transformers import TrainerCallback

from kit.errors import KitError

# Steps without a finite gradient norm that fp16 loss scaling may take: each skip halves the scale, from
# accelerate's 2**16 to 2**6.
SCALER_SKIPS_ALLOWED = 10


class FiniteGuard(TrainerCallback):
    def __init__(self, stage: str, learning_rate: float):
        self.stage, self.learning_rate = stage, learning_rate
        self.last_finite_step = 0

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if not finite(logs.get("loss")):
            raise non_finite_stop(self.stage, self.learning_rate, state.global_step, f"the loss is {logs['loss']}")
        if finite(logs.get("grad_norm")):
            self.last_finite_step = state.global_step
            return
        since = state.global_step - self.last_finite_step  # steps, whatever logging_steps is
        if not args.fp16 or since > SCALER_SKIPS_ALLOWED:
            scaled = f", and no finite one was logged in {since} steps of fp16 loss scaling" if args.fp16 else ""
            raise non_finite_stop(self.stage, self.learning_rate, state.global_step,
                                  f"the grad_norm is {logs['grad_norm']}{scaled}")
        print(f"{self.stage} step {state.global_step}: the gradient overflowed in fp16, so the loss scaler skipped "
              "this step and lowered its scale (usual in the first steps)")

    def on_step_end(self, args, state, control, model=None, **kwargs):
        bad = non_finite_weight(model) if model is not None else None
        if bad:
            raise non_finite_stop(self.stage, self.learning_rate, state.global_step,
                                  f"the trained weight {bad} holds inf or nan")


def finite(value) -> bool:
    """A logged value is finite, or not a number at all (absent)."""
    return not isinstance(value, (int, float)) or math.isfinite(value)


def non_finite_stop(stage: str, learning_rate: float, step: int, what: str) -> KitError:
    return KitError(f"{stage} step {step}: {what}, so training stopped there and no model was merged or saved "
                    f"from it. Lower {stage}.learning_rate (now {learning_rate:g}); with 16-bit weights, "
                    "model.dtype=float32 also rules out an overflow")


def non_finite_weight(model) -> str | None:
    """The first trained (requires_grad) weight holding inf or nan, or None; one device sync for all of them."""
    import torch

    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    if not named:
        return None
    finite = torch.stack([torch.isfinite(p.detach()).all().to("cpu", non_blocking=True) for _, p in named])
    if bool(finite.all()):
        return None
    return next(name for (name, _), ok in zip(named, finite.tolist()) if not ok)
