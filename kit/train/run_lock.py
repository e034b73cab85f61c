"""One run per output folder: a lock held for the run's whole life.

    with hold_run_lock(out):      # refuses, with the holder's PID, when another run is writing to OUT
        ...train...

The lock is `flock` on OUT/.run.lock, so the operating system releases it when the process ends, even on
kill -9: a stale lock never blocks a retry. The file stays (removing a lock file races with another
process opening it); it holds the PID of the last run that took it. In a multi-process run the launching
process holds the lock and tells its ranks so (RUN_LOCK_ENV); rank 0 takes it itself only when started
some other way (torchrun by hand), and the other ranks never, as they write nothing to OUT.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

from kit import ranks
from kit.errors import KitError
from kit.outputs import LOCK_NAME

RUN_LOCK_ENV = "KIT_RUN_LOCK_HELD"  # set by the launcher to the OUT whose lock it holds for its ranks


def held_for_us(out: Path) -> bool:
    """True where this process must not take OUT's lock: another rank's job, or the launcher already has it."""
    return not ranks.is_main() or os.environ.get(RUN_LOCK_ENV) == str(Path(out).resolve())


@contextmanager
def hold_run_lock(out: Path):
    """Hold OUT's lock for the block; KitError naming the holder's PID when another process has it."""
    if held_for_us(out):
        yield
        return
    out = Path(out)
    created = [p for p in (out, out / LOCK_NAME) if not p.exists()]
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            created.clear()  # the holder's file
            raise KitError(f"{out} is in use by another run ({holder(fd)}); wait for it to end, or choose another "
                           "OUT") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    except BaseException:
        remove_if_unused(created)
        raise
    finally:
        os.close(fd)  # releases the lock


def remove_if_unused(created: list[Path]) -> None:
    """A run refused or failed before writing anything leaves OUT as it found it (no lock file, no empty OUT).

    Still holding the lock, so no other run can be writing here; one that opened the file in this instant
    was about to be refused anyway.
    """
    for path in reversed(created):
        if path.name == LOCK_NAME:
            path.unlink(missing_ok=True)
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def holder(fd: int) -> str:
    """'process 1234', from the lock file; the holder may not have written its PID yet."""
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f"process {text}" if text.isdigit() else "a process that has just started"
