"""What the GPU holds, read from torch's counters and the driver's: the memory probe's readings (kit/plan/probe.py).

torch's reserved counters miss what it does not manage (the CUDA context, NCCL), which the driver's free memory
shows; and in standby they keep counting vLLM's sleep pool (a torch MemPool) after vLLM has given its memory back
to the driver, which vLLM's allocator shows.
"""

from __future__ import annotations

import resource
import sys

from kit.plan.gpus import GIB


def reset_peak() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def read_peak(asleep_now: int = 0, slept_through: bool = False) -> float:
    """GiB on the device at the peak since reset_peak(): torch's reserved peak plus what it does not manage (the
    CUDA context, NCCL); or on a CPU the process's peak resident set so far.

    asleep_now: bytes torch counts as reserved that vLLM has released to the driver (vllm_asleep_bytes).
    slept_through: vLLM slept the whole phase, so its released bytes were in every reading of the peak too."""
    import torch

    if not torch.cuda.is_available():
        scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / GIB
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    held = torch.cuda.memory_reserved() - asleep_now  # what torch's segments hold on the device now
    outside = max(0, total - free - held)
    return (torch.cuda.max_memory_reserved() - (asleep_now if slept_through else 0) + outside) / GIB


def engine_asleep(llm) -> bool:
    """Whether a vLLM engine (vLLM's LLM: llm_engine.is_sleeping()) sleeps now; False for none, or one without sleep."""
    is_sleeping = getattr(getattr(llm, "llm_engine", None), "is_sleeping", None)
    return bool(is_sleeping()) if callable(is_sleeping) else False


def vllm_asleep_bytes(trainer) -> int:
    """What vLLM released while asleep in standby: unsloth_zoo's sleep unmaps every allocation of vLLM's sleep
    allocator but the weights it shares with training. 0 when vLLM is awake, has no sleep mode, or is not here."""
    if not engine_asleep(getattr(trainer, "llm", None) or getattr(trainer.model, "vllm_engine", None)):
        return 0
    from vllm.device_allocator.cumem import CuMemAllocator

    allocations = CuMemAllocator.get_instance().pointer_to_data.values()
    return sum(data.handle[1] for data in allocations if data.tag != "weights")


def gpu_total_gib() -> float | None:
    import torch

    return torch.cuda.mem_get_info()[1] / GIB if torch.cuda.is_available() else None
