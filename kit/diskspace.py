"""A full disk while the kit writes: one line saying where, how much is free and about how much was needed.

    with disk_space("the merged model", out / "merged", needed=base_weights_bytes):
        ...write...

Torch and safetensors report a full disk in their own exception types, with the OSError (ENOSPC) as
the cause or only in the message; `is_disk_full` looks for it in all three places. What was being
written is cleaned up by the caller (a temporary folder, an incomplete checkpoint), never left half-written.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from kit.train.checkpoints import STATE, all_checkpoints
from kit.errors import KitError
from kit.train.output_folder import nearest_existing

_FULL = (errno.ENOSPC, errno.EDQUOT)


def full_disk_cause(err: BaseException | None) -> BaseException | None:
    """The exception in `err`'s chain that says the disk is full, or None."""
    while err is not None:
        if isinstance(err, OSError) and err.errno in _FULL or "No space left on device" in str(err):
            return err
        err = err.__cause__ or err.__context__
    return None


def is_disk_full(err: BaseException | None) -> bool:
    return full_disk_cause(err) is not None


def disk_full_error(what: str, where: Path, needed: int | None = None, err: BaseException | None = None) -> KitError:
    """`err`'s own file name, when it has one, says exactly what failed (a log line rather than a checkpoint)."""
    filename = getattr(full_disk_cause(err), "filename", None)
    target = f"{filename}" if filename else f"{what} to {where}"
    free = shutil.disk_usage(nearest_existing(Path(filename or where))).free
    need = f", about {size_text(needed)} needed" if needed else ""
    return KitError(f"the disk is full: writing {target} failed ({size_text(free)} free there{need}); "
                    "free some space, or choose an OUT on a disk with more room")


@contextmanager
def disk_space(what: str, where: Path, needed: int | Callable[[], int | None] | None = None,
               clean_up: Callable[[], None] | None = None):
    """Turn a full disk inside the block into one KitError; `clean_up` removes what was half-written first."""
    try:
        yield
    except Exception as err:
        if not is_disk_full(err):
            raise
        if clean_up is not None:
            clean_up()
        raise disk_full_error(what, where, needed() if callable(needed) else needed, err) from None


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def size_text(count: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TB"


# --- checkpoints: the trainer writes checkpoint-N in place; trainer_state.json is the last file it writes ---

def incomplete_checkpoints(folder: Path) -> list[Path]:
    return [p for p in all_checkpoints(folder) if p.is_dir() and not (p / STATE).exists()]


def remove_incomplete_checkpoints(folder: Path) -> None:
    """A checkpoint cut short by a full disk would be picked by --resume and fail to load: remove it."""
    for path in incomplete_checkpoints(folder):
        shutil.rmtree(path, ignore_errors=True)


def checkpoint_bytes(folder: Path, model) -> int:
    """The last complete checkpoint's size, else an estimate: trainable weights + Adam's two fp32 moments."""
    complete = [p for p in all_checkpoints(folder) if (p / STATE).exists()]
    if complete:
        return folder_bytes(max(complete, key=lambda p: p.stat().st_mtime))
    trainable = [p for p in model.parameters() if p.requires_grad]
    return sum(p.numel() * (p.element_size() + 8) for p in trainable)


def guard_checkpoints(folder: Path, model):
    """For the training loop: a full disk while saving a checkpoint ends in one line, without a broken one."""
    return disk_space("a checkpoint", folder, needed=lambda: checkpoint_bytes(folder, model),
                      clean_up=lambda: remove_incomplete_checkpoints(folder))
