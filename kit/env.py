"""What this machine can do, and the versions a run records for reproducibility."""

from __future__ import annotations

import importlib.metadata
import platform
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


def has_vllm() -> bool:
    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def gpu_name() -> str | None:
    if not has_gpu():
        return None
    import torch

    return torch.cuda.get_device_name(0)


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    from kit import __version__

    versions["kit"] = __version__
    versions["gpu"] = gpu_name() or "none"
    return versions
