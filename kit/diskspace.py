"""A full disk while the kit writes: one line saying where, how much is free and about how much was needed.

    with disk_space("the merged model", out / "merged", needed=base_weights_bytes):
        ...write...

Torch and safetensors report a full disk in their own exception types, with the OSError (ENOSPC) as
the cause or only in the message; `is_disk_full` looks for it in all three places. What was being
written is cleaned up by the caller (a temporary folder, an incomplete checkpoint), never left half-written.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from kit.errors import KitError

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


def nearest_existing(path: Path) -> Path:
    """`path` itself if it exists, else its closest existing parent (where OUT would be created)."""
    path = Path(os.path.abspath(path))
    while not path.exists():
        path = path.parent
    return path
