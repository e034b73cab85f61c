"""How many threads torch computes with on a CPU: the cores free when the run starts, re-checked as it goes.

    choice = cpu_threads.start("auto")     # measures, sets torch's thread count, says why
    cpu_threads.step_finished(seconds)     # after each training step or generation batch

torch's OpenMP threads spin while they wait for the next operation. That is the fastest setting on a free
machine, and the slowest beside another busy program: a spinning thread that shares its core with one makes
every parallel region wait for it (a GRPO step of the CPU demo took 3.4x as long beside `yes > /dev/null`).
Fewer threads, each on a free core, keeps the spin and loses only the busy core. So the kit counts the
other programs' runnable threads, uses the cores they leave, and counts again when a step is much slower
than the steps before it, or every RECHECK_SECONDS while it runs on fewer threads than cores (the other
program may have stopped). Only torch's thread count changes: OpenMP reads its wait policy once, at import.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SAMPLES, SAMPLE_GAP = 20, 0.005  # 20 looks 5 ms apart: 0.1 s, a small share of the slowest re-check interval
SLOW_STEP = 1.5  # a step this many times the recent median starts a re-count
RECENT_STEPS = 8  # the median of the last steps at the current thread count
RECHECK_SECONDS = 10.0  # held back, count again this often (0.1 s in 10 s): the other program may be gone
MIN_GAP_SECONDS = 5.0  # never count again sooner than this, however slow the steps
EXPLICIT_ENV = "OMP_NUM_THREADS"  # a thread count the user set in the environment is theirs


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    cores: int  # the cores this process may run on
    others: float | None  # other programs' runnable threads, on average over the count; None when not counted
    reason: str

    def line(self) -> str:
        return f"cpu: {self.threads} torch thread(s) on {self.cores} core(s): {self.reason}"

    def record(self) -> dict:
        """run.yaml's `cpu_threads` section."""
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(self).items()}


def usable_cores() -> int:
    return len(os.sched_getaffinity(0))


def running_threads(proc: Path = Path("/proc")) -> tuple[int, int]:
    """Runnable threads on the whole machine (/proc/stat's procs_running) and in this process."""
    stat = (proc / "stat").read_text()
    everyone = int(next(line.split()[1] for line in stat.splitlines() if line.startswith("procs_running")))
    mine = 0
    for task in (proc / "self" / "task").iterdir():
        try:
            state = (task / "stat").read_text().rpartition(")")[2].split()[0]  # the name may hold spaces
        except (OSError, IndexError):  # a thread that ended while we looked
            continue
        mine += state == "R"
    return everyone, mine


def other_running_threads(samples: int = SAMPLES, gap: float = SAMPLE_GAP) -> float:
    """Other programs' runnable threads, averaged over `samples` looks. A runnable thread waiting for a core
    counts as much as one on it: this is their demand, not the share the scheduler happens to give them."""
    counts = []
    for i in range(samples):
        everyone, mine = running_threads()
        counts.append(max(0, everyone - mine))
        if i + 1 < samples:
            time.sleep(gap)
    return statistics.fmean(counts)


def threads_for(cores: int, others: float) -> int:
    """The cores the other programs leave, at least one. A core busy half the time or more counts as taken."""
    return max(1, min(cores, cores - int(others + 0.5)))


def measured_choice(cores: int | None = None, others: float | None = None) -> ThreadChoice:
    cores = usable_cores() if cores is None else cores
    others = other_running_threads() if others is None else others
    threads = threads_for(cores, others)
    if threads == cores:
        reason = "every core is free" if others < 0.25 else f"other programs use {others:.1f} of a core"
    else:
        reason = (f"other programs keep {others:.1f} thread(s) busy; a thread sharing a core with them would "
                  "make every step wait for it")
    return ThreadChoice(threads, cores, round(others, 2), reason)


def chosen(setting: int | str) -> ThreadChoice:
    """The choice for config setting `cpu_threads` (a count, or "auto"), without applying it."""
    cores = usable_cores()
    if setting != "auto":
        return ThreadChoice(int(setting), cores, None, "cpu_threads set in the config")
    if os.environ.get(EXPLICIT_ENV, "").strip().isdigit():
        return ThreadChoice(int(os.environ[EXPLICIT_ENV]), cores, None, f"{EXPLICIT_ENV} set in the environment")
    return measured_choice(cores)


class ThreadGovernor:
    """Keeps torch's thread count at the free cores: re-counts on a slow step, and now and then while held back."""

    def __init__(self, choice: ThreadChoice, clock=time.monotonic, count=other_running_threads, say=print,
                 fixed: bool = False):
        self.first = self.choice = choice
        self.clock, self.count, self.say, self.fixed = clock, count, say, fixed
        self.recent: list[float] = []
        self.checked_at = clock()
        self.changes = 0

    def step_finished(self, seconds: float) -> None:
        if self.fixed:
            return
        slow = len(self.recent) >= 3 and seconds > SLOW_STEP * statistics.median(self.recent)
        self.recent = [*self.recent, seconds][-RECENT_STEPS:]
        since = self.clock() - self.checked_at
        held_back = self.choice.threads < self.choice.cores
        if since >= MIN_GAP_SECONDS and (slow or (held_back and since >= RECHECK_SECONDS)):
            self.recount()

    def recount(self) -> None:
        self.checked_at = self.clock()
        choice = measured_choice(self.choice.cores, self.count())
        if choice.threads != self.choice.threads and set_torch_threads(choice.threads):
            self.say(f"cpu: now {choice.threads} torch thread(s): {choice.reason}")
            self.choice, self.recent, self.changes = choice, [], self.changes + 1


def set_torch_threads(threads: int) -> bool:
    """False where a vLLM CPU engine in this process has replaced torch.set_num_threads with a warning: its
    threads are its own from then on (kit/models/vllm_engine.py loads it after the start's choice)."""
    import torch

    if not isinstance(torch.set_num_threads, type(len)):  # vLLM's CPU worker swaps in a Python function
        return False
    torch.set_num_threads(threads)
    return True


_governor: ThreadGovernor | None = None  # the process's one: torch's thread count is the process's too


def start(setting: int | str = "auto", say=print) -> ThreadChoice | None:
    """Choose the thread count, apply it and say it; with "auto", keep it fitted to the free cores after.
    None on a GPU, where the CPU's threads only feed it and torch's default stays."""
    global _governor
    from kit.env import has_gpu

    if has_gpu():
        return None
    choice = chosen(setting)
    set_torch_threads(choice.threads)
    say(choice.line())
    _governor = ThreadGovernor(choice, say=say, fixed=choice.others is None)
    return choice


def step_finished(seconds: float) -> None:
    """One training step or generation batch took `seconds`; it may start a re-count (only under "auto")."""
    if _governor is not None:
        _governor.step_finished(seconds)


def new_stage() -> None:
    """A new stage's steps take their own time (an SFT step is not a GRPO step): judge them among themselves."""
    if _governor is not None:
        _governor.recent = []


def record(setting: int | str) -> dict:
    """run.yaml's `cpu` section: the setting, the choice the run started with, and the count it holds now."""
    if _governor is None:
        return {"setting": setting, "threads": "torch's default (a GPU run)"}
    return {"setting": setting, **_governor.first.record(), "threads_now": _governor.choice.threads,
            "changes": _governor.changes}


def stop() -> None:
    global _governor
    _governor = None
