"""The share of the GPU vLLM takes: `model.gpu_memory_utilization`, or with standby on one GPU, Unsloth's own."""

from __future__ import annotations

import os

from kit.config import RunConfig


def unsloth_standby_utilization(gpu_gib: float) -> float:
    """The vLLM share Unsloth sets itself with standby on (model.vllm_standby), whatever gpu_memory_utilization
    says: its tiers for vLLM >= 0.11 by a tenth of the GPU's memory, times 0.95 (unsloth_zoo 2026.10.9,
    vllm_utils.load_vllm). A T4 gets 0.76, an A100-40GB 0.855. UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE=1 keeps yours."""
    tenth = gpu_gib / 10
    tiers = ((4.0, 0.925), (2.5, 0.9), (2.0, 0.825), (1.4, 0.8), (1.0, 0.775))
    return next((level for floor, level in tiers if tenth >= floor), 0.75) * 0.95


def vllm_utilization(cfg: RunConfig, gpu_gib: float) -> float:
    """The share of the GPU vLLM will take: Unsloth's own with standby on one GPU, else the setting."""
    standby = cfg.model.vllm_standby and not cfg.launch.several_processes  # more processes: TRL's sleep mode
    if standby and os.environ.get("UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE", "0") == "0":
        return unsloth_standby_utilization(gpu_gib)
    return cfg.model.gpu_memory_utilization


def standby_notes(cfg: RunConfig, gpu_gib: float) -> list[str]:
    util = vllm_utilization(cfg, gpu_gib)
    if util == cfg.model.gpu_memory_utilization:
        return []
    return [f"model.vllm_standby: Unsloth sets vLLM's share to {util:.4g} of this GPU itself, in place of "
            f"model.gpu_memory_utilization={cfg.model.gpu_memory_utilization}; the plan uses {util:.4g} "
            "(UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE=1 keeps the setting)"]
