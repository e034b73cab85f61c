"""Quiet by default, everything with -v: `python -m kit train ... -v` (make train V=1) sets KIT_VERBOSE=1.

Quiet means one compact line per training step (kit/monitor/console.py) and no library warnings that say
nothing a user can act on; verbose shows TRL's whole metrics dict per step and every warning.
"""

from __future__ import annotations

import logging
import os
import warnings

VERBOSE_ENV = "KIT_VERBOSE"

# Printed on every run, actionable by nobody: torch's pytree deprecation notes about torchao's enums, and
# bitsandbytes' CPU kernel fallback note.
NOISY_LOGGERS = ("torch.utils._pytree", "torchao", "bitsandbytes", "bitsandbytes.backends.cpu.ops")


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def set_verbose(on: bool) -> None:
    """For this process and the processes it starts (a multi-process run's ranks)."""
    if on:
        os.environ[VERBOSE_ENV] = "1"


def quiet_libraries() -> None:
    """Call before the heavy imports: silences the loggers above, unless verbose."""
    if verbose():
        return
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    # vLLM logs its whole engine config, and warns about LD_PRELOAD and kernels a CPU lacks, at every load
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    warnings.filterwarnings("ignore", message=".*torch.distributed.reduce_op.*")
    warnings.filterwarnings("ignore", module="torchao")
    warnings.filterwarnings("ignore", message=".*register_constant.*")
    # Unsloth's loader sets HF_HUB_ENABLE_HF_TRANSFER in its process; every process started from it (a rank, a
    # doctor's worker, a test's subprocess) then hears huggingface_hub call the variable deprecated
    warnings.filterwarnings("ignore", message=".*HF_HUB_ENABLE_HF_TRANSFER.*")
    # every tool recipe reaches TRL as an environment_factory (kit.tools.toolbox), on purpose: TRL calls it experimental
    warnings.filterwarnings("ignore", message=".*'environment_factory', which is an experimental feature.*")
