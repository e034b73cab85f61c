"""GPUs by the names people know them by, with the memory CUDA reports for them (GiB)."""

from __future__ import annotations

import re

from kit.errors import KitError

GIB = 1024**3

# torch.cuda.get_device_properties(0).total_memory on each card, rounded: what a run can address.
GPUS: dict[str, float] = {
    "T4": 14.7,  # Colab and Kaggle free tier; sold as 16 GB
    "P100": 15.9,  # Kaggle
    "L4": 22.0,
    "A10G": 22.2,
    "RTX3090": 23.6,
    "RTX4090": 23.6,
    "A100-40GB": 39.4,
    "A100-80GB": 79.2,
    "H100": 79.2,
    "H200": 139.8,
}


# CUDA compute capability: vLLM needs 7.0 or more (Volta and newer), so a P100 generates without it.
COMPUTE_CAPABILITY: dict[str, float] = {
    "T4": 7.5, "P100": 6.0, "L4": 8.9, "A10G": 8.6, "RTX3090": 8.6, "RTX4090": 8.9,
    "A100-40GB": 8.0, "A100-80GB": 8.0, "H100": 9.0, "H200": 9.0,
}
VLLM_MIN_CAPABILITY = 7.0


def compute_capability(name: str) -> float | None:
    """A known GPU's compute capability, by its short name or one CUDA reports ('Tesla P100-PCIE-16GB')."""
    key = name.upper().replace(" ", "")
    if key in COMPUTE_CAPABILITY:
        return COMPUTE_CAPABILITY[key]
    known = [short for short in COMPUTE_CAPABILITY if short.split("-")[0] in key]
    return COMPUTE_CAPABILITY[max(known, key=len)] if known else None


def too_old_for_vllm(gpu: str) -> float | None:
    """The GPU's compute capability when it is known and below what vLLM needs, else None."""
    capability = compute_capability(gpu) if gpu else None
    return capability if capability is not None and capability < VLLM_MIN_CAPABILITY else None


def gpu_memory_gib(name: str) -> float:
    """A GPU's usable memory: a name from GPUS, or a size such as 16GB / 12GiB."""
    key = name.upper().replace(" ", "")
    if key in GPUS:
        return GPUS[key]
    size = re.fullmatch(r"(\d+(?:\.\d+)?)(GB|GIB|G)", key)
    if size:
        value = float(size[1])
        return value if size[2] == "GIB" else value * 1e9 / GIB  # a card sold as 16 GB has 16e9 bytes
    raise KitError(f"unknown GPU '{name}'; choose from {', '.join(GPUS)}, or give a size such as 16GB")


def this_gpu() -> tuple[str, float] | None:
    """The name and memory of the GPU this process sees, if any."""
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return props.name, props.total_memory / GIB
