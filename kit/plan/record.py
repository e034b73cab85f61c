"""What the GPU really held, next to what the plan said, in OUT/run.yaml: real runs correct the estimator.

After the first optimizer steps (when the optimizer state exists and a full generate-train cycle has run),
`MemoryRecorder` writes torch.cuda.max_memory_allocated / reserved under `memory:` in run.yaml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from transformers import TrainerCallback

from kit.outputs import write_run_section
from kit.plan.gpus import GIB
from kit.plan.planner import Plan
from kit.plan.vllm_share import STANDBY_COUNTING, standby_applies

RECORD_AFTER_STEP = 2


def planned(plan: Plan) -> dict:
    section = {
        "gpu": plan.gpu,
        "gpu_gib": round(plan.gpu_gib, 2),
        "estimated_peak_gib": round(plan.peak_gib, 2),
        "estimated_terms_gib": {t.name: round(t.gib, 3) for t in plan.estimate.terms},
    }
    vision = plan.shape.vision is not None
    if plan.cfg.model.fast_inference:  # with standby, Unsloth's share, not the setting (kit.plan.planner)
        section["vllm_gpu_memory_utilization"] = plan.vllm_utilization
    if plan.cfg.model.fast_inference and standby_applies(plan.cfg, vision):
        section["vllm_standby"] = STANDBY_COUNTING
    return section


def cuda_peaks() -> dict | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return {
        "measured_max_allocated_gib": round(torch.cuda.max_memory_allocated() / GIB, 3),
        "measured_max_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 3),
    }


class MemoryRecorder(TrainerCallback):
    def __init__(self, run_file: Path, plan: Plan | None, read_peaks: Callable[[], dict | None] = cuda_peaks):
        self.run_file, self.plan, self.read_peaks = run_file, plan, read_peaks
        self.done = False

    def on_step_end(self, args, state, control, **kwargs):
        if self.done or state.global_step < RECORD_AFTER_STEP:
            return
        self.done = True
        peaks = self.read_peaks()
        if peaks is None and self.plan is None:
            return
        section = planned(self.plan) if self.plan else {}
        section.update(peaks or {"measured": "no GPU"})
        section["after_step"] = state.global_step
        write_run_section(self.run_file, "memory", section)
