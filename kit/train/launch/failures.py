"""Which process of a launched run failed first, told to the launcher that started it, on every machine.

    record_failure(err)           # in a rank, as it fails
    first_failure(folder)         # in the launcher, once the ranks have ended: "rank 1 (machine 1): reason"

The launcher names a folder (FAILURES_ENV); a rank that fails leaves its one-line reason there. When one rank
fails, the others fail after it (a collective whose peer is gone), and their reasons are consequences: the
launcher reports the earliest. On several machines each launcher sees only its own machine's folder, so a rank
also puts its reason in the run's store on the main machine (torch.distributed's TCPStore, at MASTER_ADDR:
MASTER_PORT, which every rank reaches) and copies the run's first failure from there into its own folder. The
store orders failures as they arrive, which needs no agreement between the machines' clocks.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

from kit import ranks
from kit.errors import KitError

FAILURES_ENV = "KIT_RANK_FAILURES"
FIRST = "first"  # the run's first failure, from the store (several machines)
STORE_COUNT = "kit/failures"
STORE_TIMEOUT = timedelta(seconds=10)  # the store is gone when the main machine is: do not wait on it
WATCH_EVERY_S = 0.5  # how often a rank looks for another's failure: a question to the store, microseconds
MAIN_GONE_GRACE_S = 60  # the main machine is gone: time for this process to end by itself first
failing = threading.Event()  # this rank is reporting its own failure: the watcher leaves it to finish


def record_failure(err: BaseException) -> None:
    """Leave this rank's reason for the launcher, which reports the rank that failed first."""
    folder = os.environ.get(FAILURES_ENV)
    if not folder or not ranks.in_worker():
        return
    text = str(err).splitlines()[0] if str(err) else ""
    reason = text if isinstance(err, KitError) else f"{type(err).__name__}: {text}"
    # the reason may quote a completion: whatever the model wrote (a lone surrogate) is kept as an escape
    line = f"{who()}: {reason}".encode("utf-8", "backslashreplace").decode("utf-8")
    failing.set()
    first = share_failure(line) if ranks.several_machines() else None
    if ranks.several_machines() and first is None:
        line += " (the main machine's store was out of reach: a failure there may have come first; see its console)"
    Path(folder, f"rank-{ranks.rank()}").write_text(f"{time.time()}\t{line}", encoding="utf-8")
    if first:
        Path(folder, FIRST).write_text(first, encoding="utf-8")


def record_interruption() -> None:
    """A rank stopped on Ctrl-C / SIGTERM after saving a checkpoint: not a failure."""
    folder = os.environ.get(FAILURES_ENV)
    if folder and ranks.in_worker():
        Path(folder, f"interrupted-{ranks.rank()}").touch()


def was_interrupted(folder: Path) -> bool:
    return any(Path(folder).glob("interrupted-*"))


def first_failure(folder: Path) -> str | None:
    """'rank N: reason' for the earliest failure recorded in `folder` (the others followed from it); on several
    machines, the run's earliest as the store ordered them, where a rank here could read it."""
    if Path(folder, FIRST).is_file():
        return Path(folder, FIRST).read_text(encoding="utf-8")
    records = []
    for path in Path(folder).glob("rank-*"):
        stamp, _, line = path.read_text(encoding="utf-8").partition("\t")
        records.append((float(stamp), line))
    return min(records)[1] if records else None


def who() -> str:
    """'rank 1', or 'rank 1 (machine 1)' when the run spans machines."""
    return f"rank {ranks.rank()}" + (f" (machine {ranks.machine_rank()})" if ranks.several_machines() else "")


def share_failure(line: str) -> str | None:
    """Add `line` to the run's store; return the run's first failure there, or None when the store is out of
    reach (then this machine's launcher names the earliest it saw)."""
    try:
        store = run_store()
        order = store.add(STORE_COUNT, 1)
        store.set(f"{STORE_COUNT}/{order}", line)
        return store.get(f"{STORE_COUNT}/1").decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - a failing rank must still report its own failure
        return None


def watch_for_failures() -> None:
    """In a rank of a run across machines, launched by the kit: end this process as soon as a rank on any machine
    has failed, leaving the run's first failure for this machine's launcher."""
    folder = os.environ.get(FAILURES_ENV)
    if not (folder and ranks.in_worker() and ranks.several_machines()):
        return
    import torch.distributed  # noqa: F401  (here, not first in the thread: two threads importing torch can deadlock)

    done = threading.Event()
    watcher = threading.Thread(target=stop_on_first_failure, args=(Path(folder), done), name="kit-failure-watch",
                               daemon=True)
    watcher.start()

    def stop_watching():  # before the interpreter's teardown, where a thread inside torch's store client can abort it
        done.set()
        watcher.join(timeout=5)

    atexit.register(stop_watching)


def stop_on_first_failure(folder: Path, done: threading.Event) -> None:
    key = f"{STORE_COUNT}/1"
    try:
        store = run_store()
        while not store.check([key]):
            if done.wait(WATCH_EVERY_S):
                return
        first = store.get(key).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the store went with the main machine's launcher, see below
        first = None
    if first is None:
        # After a success the launcher there waits for every process before it ends, so its store went because it
        # stopped: a failure or a stop there, too quick for this watcher to read. A process that has not ended by
        # itself (gloo raises at once, NCCL waits out its timeout) is ended now.
        if done.wait(MAIN_GONE_GRACE_S) or failing.is_set():
            return
        first = (f"the main machine's launcher ended (its store at {os.environ.get('MASTER_ADDR')}:"
                 f"{os.environ.get('MASTER_PORT')} is gone): its console says why")
    if failing.is_set() or done.is_set():  # this rank's own failure, which it is reporting, or the end of the run
        return
    Path(folder, FIRST).write_text(first, encoding="utf-8")
    print(f"error: {who()} stops because another process failed first: {first}", file=sys.stderr, flush=True)
    os._exit(1)  # out of whatever collective waits for the dead peer; the launcher here reports the first failure


def run_store():
    """A client of the store torchrun's agent keeps on the main machine for the whole run."""
    import torch.distributed as dist

    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                         timeout=STORE_TIMEOUT)
