"""GPUs by the names people know them by, with the memory CUDA reports for them (GiB)."""

from __future__ import annotations

import re

from kit.errors import KitError

GIB = 1024**3

# torch.cuda.get_device_properties(0).total_memory on each card, rounded: what a run can address.
GPUS: dict[str, float] = {
    "T4": 14.7,  # Colab and Kaggle free tier; sold as 16 GB
    "P100": 15.9,  # Kaggle
    "V100": 15.8,
    "L4": 22.0,
    "A10G": 22.2,
    "RTX3090": 23.6,
    "RTX4090": 23.6,
    "A100-40GB": 39.4,
    "A100-80GB": 79.2,
    "H100": 79.2,
    "H200": 139.8,
}


COMPUTE_CAPABILITY: dict[str, float] = {
    "T4": 7.5, "P100": 6.0, "V100": 7.0, "L4": 8.9, "A10G": 8.6, "RTX3090": 8.6, "RTX4090": 8.9,
    "A100-40GB": 8.0, "A100-80GB": 8.0, "H100": 9.0, "H200": 9.0,
}
# No binary of the GPU stack the kit pins has kernels below sm_75: torch 2.13.0+cu130's libtorch_cuda.so
# (sm_75 to sm_121, no PTX), vLLM 0.31's extension and bitsandbytes' CUDA 13 library. Older GPUs fail at
# their first CUDA kernel, with or without vLLM; Unsloth's own check (7.0 for vLLM) lets a V100 through.
STACK_MIN_CAPABILITY = 7.5
VLLM_UNVERIFIED_BELOW = 8.0  # vLLM 0.31 picks Triton attention there (FlashAttention and FlashInfer need 8.0)


def compute_capability(name: str) -> float | None:
    """A known GPU's compute capability, by its short name or one CUDA reports ('Tesla P100-PCIE-16GB')."""
    key = name.upper().replace(" ", "")
    if key in COMPUTE_CAPABILITY:
        return COMPUTE_CAPABILITY[key]
    known = [short for short in COMPUTE_CAPABILITY if short.split("-")[0] in key]
    return COMPUTE_CAPABILITY[max(known, key=len)] if known else None


def too_old(gpu: str, capability: float | None = None) -> float | None:
    """The GPU's compute capability when it is known (or given) and below what the kit's GPU stack runs on."""
    capability = capability if capability is not None else compute_capability(gpu) if gpu else None
    return capability if capability is not None and capability < STACK_MIN_CAPABILITY else None


def gpu_problem(gpu: str, capability: float | None = None) -> str | None:
    """One paragraph when the GPU is too old for the pinned stack: what fails, and what to do instead."""
    found = too_old(gpu, capability)
    if found is None:
        return None
    return (f"the {gpu} has compute capability {found}, and the kit's GPU install (torch 2.13.0 for CUDA 13, "
            f"vLLM 0.31, bitsandbytes 0.50) has kernels for {STACK_MIN_CAPABILITY} (T4) and newer only: it stops "
            "at its first CUDA kernel, with or without vLLM. Choose a T4 or newer (Kaggle: Settings > Accelerator "
            "> GPU T4 x2; Colab: T4), or train on the CPU (PROFILE=smoke, or make demo-real for a real model)")


def vllm_notes(gpu: str) -> list[str]:
    """What is not yet known about vLLM on this GPU."""
    capability = compute_capability(gpu) if gpu else None
    if capability is None or not STACK_MIN_CAPABILITY <= capability < VLLM_UNVERIFIED_BELOW:
        return []
    return [f"vLLM 0.31 on compute capability {capability} uses Triton attention (FlashAttention and FlashInfer "
            "need 8.0); the kit has not run it on such a GPU yet. If vLLM's engine fails to start or to generate, "
            "the run stops before training and says so; model.fast_inference=false trains without vLLM "
            "(generation with transformers, several times slower)"]


def live_gpu_problem() -> str | None:
    """gpu_problem for the GPU this process will use, as nvidia-smi reports it (no table needed). Not through
    torch: its first CUDA call builds the memory allocator, and Unsloth's import, which comes later, sets the
    allocator's settings (PYTORCH_ALLOC_CONF=expandable_segments:True) for an allocator not yet built."""
    from kit import env

    found = env.query_gpu("name", "compute_cap")
    if found is None:
        return None
    name, capability = found
    try:
        return gpu_problem(name, float(capability))
    except ValueError:  # what an old driver answers: "[Not Supported]"
        return gpu_problem(name)


def gpu_memory_gib(name: str) -> float:
    """A GPU's usable memory: a name from GPUS, or a size such as 16GB / 12GiB."""
    key = name.upper().replace(" ", "")
    if key in GPUS:
        return GPUS[key]
    size = re.fullmatch(r"(\d+(?:\.\d+)?)(GB|GIB|G)", key)
    if size and float(size[1]) <= 0:
        raise KitError(f"GPU size '{name}' must be more than 0, e.g. 16GB")
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
