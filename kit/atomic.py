"""Folders that appear whole or not at all, and builds that run once across processes.

    with atomic_dir(out / "merged") as tmp:   # write into tmp; it becomes OUT/merged only if the block succeeds
        ...
    build_locked(cache_dir() / "tiny-llama-v4", build)   # several processes: one builds, the others wait

A process killed while writing (kill -9, out of memory, a full disk) leaves its `.NAME.partial-*` folder
behind: no `finally` runs. `remove_partials` sweeps them, called only where no other process can be
writing there: under the run's lock (kit.train.run_lock) or a build's lock.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

PARTIAL = ".partial-"  # in every temporary folder's name: `.merged.partial-x1y2`


def partial_prefix(final: Path) -> str:
    return f".{Path(final).name}{PARTIAL}"


@contextmanager
def atomic_dir(final: Path):
    """Yield a temporary folder beside `final`; rename it to `final` only if the block succeeds."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=partial_prefix(final), dir=final.parent))
    try:
        yield tmp
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_partials(folder: Path, prefix: str = ".") -> list[Path]:
    """Delete the temporary folders and files a killed process left in `folder` (names: `{prefix}...partial-...`)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.name.startswith(prefix) and PARTIAL in p.name]
    for path in found:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return found


def build_locked(path: Path, build: Callable[[Path], None], done: str = "config.json") -> None:
    """Build `path` once across processes: the first takes the lock and builds into a temporary folder that is
    renamed when complete; the others wait and find it built. `done` is the file a complete build has."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process is building it: say so, then wait for it
            print(f"waiting for another process that is building {path}", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when the process dies
        if (path / done).exists():
            return
        remove_partials(path.parent, partial_prefix(path))  # a builder killed earlier; none can be running now
        with atomic_dir(path) as tmp:
            build(tmp)
