"""One check, one fresh process: how `kit doctor` and bench/gpu_check run each check.

Unsloth patches transformers and TRL when it is imported, vLLM starts processes of its own, and
torch.cuda.max_memory_allocated counts everything a process did: so every check runs in a process of its
own (`Driver.run`), offline, with a time limit, and reports back a small JSON result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PASS, FAIL, SKIP = "pass", "fail", "skip"
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the kit package (a checkout's root)


@dataclass
class Check:
    name: str
    status: str
    summary: str = ""  # the figures in words, when it passed
    reason: str | None = None  # why it failed or was skipped
    figures: dict = field(default_factory=dict)

    def line(self) -> str:
        return f"{self.name:<21}{self.status:<6}{self.summary or self.reason or ''}"


def to_check(name: str, result: dict, summaries: dict) -> Check:
    """A worker's result as a check: its figures (with the worker's wall time and, on failure, its log's tail),
    and `summaries[name]` of them in words when it passed."""
    extra = {k: result[k] for k in ("wall_seconds", "log_tail") if k in result}
    figures = {**result.get("figures", {}), **extra}
    summary = summaries[name](figures) if result["status"] == PASS else ""
    return Check(name, result["status"], summary, result.get("reason"), figures)


def announce(check: Check) -> Check:
    print(check.line(), flush=True)
    return check


def skipped(name: str, reason: str) -> Check:
    return Check(name, SKIP, reason=reason)


def exit_code(checks: list[Check]) -> int:
    return 1 if any(c.status == FAIL for c in checks) else 0


class Driver:
    """Starts each worker in a fresh process, with the offline environment, and keeps its log.

    `entry` is the command that runs a worker by name: `[python, "-m", "kit.doctor.entry"]` (the default) or
    `[python, "-m", "bench.gpu_check.workers"]`; the worker's name and its spec file follow it.
    """

    def __init__(self, work: Path, timeout_s: int, total: int, entry: list[str] | None = None):
        self.work, self.timeout_s, self.total, self.done = work, timeout_s, total, 0
        self.entry = entry or [sys.executable, "-m", "kit.doctor.entry"]

    def run(self, worker: str, label: str, spec: dict, counted: bool = True) -> dict:
        self.done += counted
        progress(f"[{self.done}/{self.total}] {label} ..." if counted else f"{label} ...")
        tag = f"{self.done:02d}-{worker}"
        spec = {**spec, "result_file": str(self.work / f"{tag}.result.json")}
        spec_file, log_file = self.work / f"{tag}.spec.json", self.work / f"{tag}.log"
        spec_file.write_text(json.dumps(spec))
        started = time.perf_counter()
        code = self.wait_for([*self.entry, worker, str(spec_file)], log_file)
        if code is None:
            return failed(f"timed out after {self.timeout_s} s", log_file)
        seconds = time.perf_counter() - started
        progress(f"      {label}: {seconds:.0f} s")
        result_file = Path(spec["result_file"])
        if code or not result_file.is_file():
            return failed(f"exit code {code}", log_file)
        return {**json.loads(result_file.read_text()), "wall_seconds": seconds}  # with imports and loading

    def wait_for(self, command: list[str], log_file: Path) -> int | None:
        """The worker's exit code, or None when it ran out of time. A session of its own, so that on a
        timeout or Ctrl-C its whole process group goes (vLLM may start processes of its own)."""
        with log_file.open("w") as log:  # cwd: the work folder, where Unsloth writes its compiled cache
            child = subprocess.Popen(command, cwd=self.work, env=worker_env(), stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
            try:
                return child.wait(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                return None
            finally:
                if child.poll() is None:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()


def worker_env() -> dict:
    """Offline: anything that tries the hub fails at once instead of waiting on the network."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               UNSLOTH_DISABLE_STATISTICS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SOURCE_ROOT), os.environ.get("PYTHONPATH")]))
    return env


def run_worker(workers: dict, name: str, spec_file: Path) -> None:
    """The worker side: run `name` on its spec and write its result where the driver looks for it."""
    spec = json.loads(spec_file.read_text())
    result = workers[name](spec)
    Path(spec["result_file"]).write_text(json.dumps(result))


def failed(why: str, log_file: Path) -> dict:
    """A failed worker: its exception (the last traceback's closing line) as the reason, the log's tail in the JSON."""
    lines = log_file.read_text(errors="replace").splitlines() if log_file.is_file() else []
    error = exception_line(lines)
    return {"status": FAIL, "reason": f"{why}: {error[:300]}" if error else why, "figures": {}, "log_tail": lines[-40:]}


def exception_line(lines: list[str]) -> str | None:
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        return None
    after = [line for line in lines[starts[-1] + 1:] if line and not line.startswith((" ", "\t"))]
    return after[0] if after else None


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def exit_on_sigterm() -> None:
    """SIGTERM (a timeout, a scheduler) unwinds like Ctrl-C: the running worker's group is killed and the temp
    folder removed, where the default action would leave the worker running on its own."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
