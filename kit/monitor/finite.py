"""A run that goes non-finite stops at that step, with the setting to change.

TRL trains on through a nan loss (every later step is nan too), prints its metrics, finishes, and the merge
then writes a model whose weights are nan: "done" with nothing usable. `FiniteGuard` checks the logged loss
and gradient norm, and every trained weight after each optimizer step, and raises instead.
"""

from __future__ import annotations

import math

from transformers import TrainerCallback

from kit.errors import KitError


class FiniteGuard(TrainerCallback):
    def __init__(self, stage: str, learning_rate: float):
        self.stage, self.learning_rate = stage, learning_rate

    def on_log(self, args, state, control, logs=None, **kwargs):
        for key in ("loss", "grad_norm"):
            value = (logs or {}).get(key)
            if isinstance(value, (int, float)) and not math.isfinite(value):
                raise non_finite_stop(self.stage, self.learning_rate, state.global_step, f"the {key} is {value}")

    def on_step_end(self, args, state, control, model=None, **kwargs):
        bad = non_finite_weight(model) if model is not None else None
        if bad:
            raise non_finite_stop(self.stage, self.learning_rate, state.global_step,
                                  f"the trained weight {bad} holds inf or nan")


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
