"""Which process this is, for code that runs in every rank of a multi-process run.

torchrun (under `accelerate launch`) sets WORLD_SIZE, RANK and LOCAL_RANK; a plain `python -m kit`
has none of them and is a world of one, so these helpers cost nothing on one GPU.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def machine_rank() -> int:
    """Which machine this process runs on, 0 for the main one (torchrun's GROUP_RANK, set in every process)."""
    return int(os.environ.get("GROUP_RANK", "0"))


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def local_world_size() -> int:
    """This machine's processes (torchrun's LOCAL_WORLD_SIZE); all of them on one machine."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", world_size()))


def several_machines() -> bool:
    """True in a rank of a run across machines."""
    return world_size() > local_world_size()


def in_worker() -> bool:
    """True inside a rank started by a launcher with more than one process."""
    return world_size() > 1


def is_main() -> bool:
    return rank() == 0


def state():
    """accelerate's process state, set up for this machine: gloo on CPU, NCCL on GPUs.

    The first call fixes it for the process (the trainer's own call reuses it), so CPU must be said here.
    """
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def wait_for_everyone() -> None:
    if in_worker():
        state().wait_for_everyone()


def leave() -> None:
    """End this rank's part in the process group before the interpreter exits.

    Left to the interpreter's exit, gloo's worker threads are torn down in no set order, and once in a CI run
    a rank aborted there ("terminate called without an active exception") after its work was done.
    """
    if not in_worker():
        return
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def any_rank(flag: bool) -> bool:
    """True on every rank when it is True on at least one (a collective: every rank must call it)."""
    if not in_worker():
        return flag
    import torch
    import torch.distributed as dist

    value = torch.tensor([int(flag)], device=state().device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def gather_to_main(item) -> list | None:
    """Every rank's `item`, in rank order, on rank 0; None on the others."""
    if not in_worker():
        return [item]
    from accelerate.utils import gather_object

    state()
    items = gather_object([item])
    return items if is_main() else None


def quiet_other_ranks() -> None:
    """Ranks other than 0 print nothing: the console shows one run's progress, not N copies of it.

    Their errors still reach stderr, so a rank that fails says why.
    """
    if not in_worker() or is_main():
        return
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (for the life of the process)
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)  # errors still show
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["DATASETS_VERBOSITY"] = "error"
