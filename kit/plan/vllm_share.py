"""The share of the GPU vLLM takes, and whether Unsloth runs it in standby: `model.gpu_memory_utilization`, or
with standby on one GPU, Unsloth's own share, with vLLM's KV cache released while training runs."""

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


def standby_applies(cfg: RunConfig, vision: bool) -> bool:
    """Whether vLLM will run in Unsloth's standby: asked for, in one process (several: TRL's own sleep mode), and
    for a text model: Unsloth turns standby off for vision models and keeps gpu_memory_utilization
    (unsloth_zoo 2026.10.9, vllm_utils.load_vllm) unless UNSLOTH_VLLM_STANDBY_VISION=1 forces it."""
    if not cfg.model.vllm_standby or cfg.launch.several_processes:
        return False
    return not vision or os.environ.get("UNSLOTH_VLLM_STANDBY_VISION", "0") != "0"


def vllm_utilization(cfg: RunConfig, gpu_gib: float, vision: bool) -> float:
    """The share of the GPU vLLM will take: Unsloth's own with standby, else the setting."""
    if standby_applies(cfg, vision) and os.environ.get("UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE", "0") == "0":
        return unsloth_standby_utilization(gpu_gib)
    return cfg.model.gpu_memory_utilization


def standby_notes(cfg: RunConfig, util: float, vision: bool) -> list[str]:
    """What the plan says of standby: off for a vision model, or the share Unsloth sets (`util`, the plan's)."""
    if cfg.model.vllm_standby and vision and not standby_applies(cfg, vision):
        return ["model.vllm_standby: Unsloth turns standby off for a vision-language model, so vLLM keeps "
                f"model.gpu_memory_utilization={cfg.model.gpu_memory_utilization} of the GPU the whole run; "
                "the plan counts it so"]
    if util == cfg.model.gpu_memory_utilization:
        return []
    return [f"model.vllm_standby: Unsloth sets vLLM's share to {util:.4g} of this GPU itself, in place of "
            f"model.gpu_memory_utilization={cfg.model.gpu_memory_utilization}; the plan uses {util:.4g} "
            "(UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE=1 keeps the setting), and counts vLLM's KV cache as released "
            "while training runs"]


STANDBY_COUNTING = ("vLLM's KV cache is counted while it generates and not while training runs (standby releases "
                    "it then); torch's reserved counters keep it even asleep, as vLLM's sleep allocator is a torch "
                    "MemPool, so measured_max_reserved_gib counts it on top of training")
