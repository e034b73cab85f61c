"""Running model-written code under the active isolation level, with a deadline and capped output.

`run_python(code, tests)` counts the assert-style tests the code passes: the tests are split outside
(kit/sandbox/split_tests.py), only the calls into the code run inside, and what comes back (at most
OUTPUT_LIMIT bytes) is decoded and checked by the checker (kit/sandbox/checker.py), never by the trainer.
`run_program(code, stdin)` runs the code as a program and returns its stdout (capped), for tests that
compare output. The level (kit.sandbox.isolation) is the one KIT_CODE_ISOLATION names, or the first whose
trial run works here (`active_level`). At the deadline the whole sandbox is killed: its processes die with
the process the kit started (a PID namespace, or bwrap's --die-with-parent), and seccomp stops the code
from leaving its process group or session.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kit.sandbox.checker import cpu_seconds
from kit.sandbox.isolation import (
    ENV_VAR,
    ENVIRONMENT,
    HERE,
    LEVELS,
    SandboxUnavailable,
    command,
    describe,
    python_executable,
    trainer_guard,
)
from kit.sandbox.split_tests import split_test

OUTPUT_LIMIT = 1 << 20  # bytes read back from one run; the rest is dropped and the run killed
CHECKER = HERE / "checker.py"
CHECKER_SECONDS = 10  # wall clock, at least; or 3 s per CPU second the checker may use (kit/sandbox/checker.py)


@dataclass
class Outcome:
    stdout: bytes
    timed_out: bool = False
    truncated: bool = False
    returncode: int | None = None


@dataclass
class SandboxResult:
    error: str | None  # the code itself failed (raised, timed out, was killed), else None
    passed: int  # tests that passed
    total: int
    timed_out: bool = False

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else float(self.error is None)


@dataclass
class ProbeRun:
    """One sandboxed run's answers, not yet checked."""
    splits: list
    lines: list[str]
    error: str | None
    timed_out: bool


def run_python(code: str, tests=(), timeout: float = 5.0, memory_mb: int = 512, level: str | None = None
               ) -> SandboxResult:
    """Run `code`, then check each assert-style test against it; raises UnsupportedTest for a test it cannot split."""
    return check_runs([run_probes(code, tests, timeout, memory_mb, level)])[0]


def run_probes(code: str, tests=(), timeout: float = 5.0, memory_mb: int = 512, level: str | None = None
               ) -> ProbeRun:
    """Run `code` in the sandbox and collect the values of the tests' probes; check_runs decides pass or fail."""
    splits = [split_test(t) for t in tests]
    probes = [p for s in splits for p in s.probes]
    request = {"mode": "probes", "code": code, "probes": probes, "memory_mb": memory_mb,
               "cpu_seconds": max(1, int(timeout) + 1)}
    outcome = run_request(request, timeout, level)
    lines = outcome.stdout.decode(errors="replace").splitlines()[:len(probes)]
    return ProbeRun(splits, lines, run_error(outcome, len(lines), len(probes)), outcome.timed_out)


def check_runs(runs: list[ProbeRun]) -> list[SandboxResult]:
    """Verdicts from one checker process for the whole batch; if it gives up, each run is checked alone, so one
    pathological run fails only itself."""
    if not runs:
        return []
    verdicts = call_checker(runs) or [(call_checker([run]) or [gave_up(run)])[0] for run in runs]
    # a run that timed out passes nothing, whatever it answered first (code can answer, then hang in atexit)
    return [SandboxResult(run.error or verdict["error"], 0 if run.timed_out else sum(verdict["passed"]),
                          len(run.splits), run.timed_out)
            for run, verdict in zip(runs, verdicts)]


def gave_up(run: ProbeRun) -> dict:
    return {"passed": [False] * len(run.splits), "error": "its results could not be checked (the checker gave up)"}


def call_checker(runs: list[ProbeRun]) -> list[dict] | None:
    """The checker process's verdicts (kit/sandbox/checker.py), or None when it failed or was stopped."""
    request = [{"checks": [s.check for s in run.splits], "probe_counts": [len(s.probes) for s in run.splits],
                "lines": run.lines} for run in runs]
    timeout = max(CHECKER_SECONDS, 3 * cpu_seconds(len(runs)))  # a busy machine's wall clock runs ahead of CPU time
    try:
        done = subprocess.run([python_executable(), "-I", "-S", str(CHECKER)], input=json.dumps(request).encode(),
                              capture_output=True, timeout=timeout, check=False, env=ENVIRONMENT)
        verdicts = json.loads(done.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        return None
    fits = isinstance(verdicts, list) and len(verdicts) == len(runs) and all(
        len(v["passed"]) == len(run.splits) for v, run in zip(verdicts, runs))
    return verdicts if fits else None


def run_program(code: str, stdin: str = "", timeout: float = 5.0, memory_mb: int = 512, level: str | None = None
                ) -> Outcome:
    request = {"mode": "program", "code": code, "stdin": stdin, "memory_mb": memory_mb,
               "cpu_seconds": max(1, int(timeout) + 1)}
    return run_request(request, timeout, level)


def run_error(outcome: Outcome, answered: int, asked: int) -> str | None:
    if outcome.timed_out:
        return "timed out"
    if outcome.truncated:
        return f"wrote more than {OUTPUT_LIMIT} bytes"
    if answered < asked:
        return f"the process died (exit code {outcome.returncode})"
    return None


def run_request(request: dict, timeout: float, level: str | None = None) -> Outcome:
    level = level or active_level()
    with (tempfile.TemporaryDirectory(prefix="kit-sandbox-", ignore_cleanup_errors=True) as scratch,
          trainer_guard(level)):
        process = subprocess.Popen(command(level, Path(scratch)), cwd=scratch, env=ENVIRONMENT,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   start_new_session=True, close_fds=True)
        try:
            send(process, request)
            return read_capped(process, timeout)
        finally:
            kill(process)


def send(process: subprocess.Popen, request: dict) -> None:
    try:
        process.stdin.write(json.dumps(request).encode())
        process.stdin.close()
    except BrokenPipeError:
        pass  # it died before reading; read_capped reports that


def read_capped(process: subprocess.Popen, timeout: float) -> Outcome:
    """stdout until EOF, the deadline or OUTPUT_LIMIT bytes, whichever comes first."""
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return Outcome(b"".join(chunks), timed_out=True)
            if not selector.select(left):
                continue
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > OUTPUT_LIMIT:
                return Outcome(b"".join(chunks)[:OUTPUT_LIMIT], truncated=True)
    try:
        returncode = process.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return Outcome(b"".join(chunks), timed_out=True)
    return Outcome(b"".join(chunks), returncode=returncode)


def kill(process: subprocess.Popen) -> None:
    for target in (lambda: os.killpg(process.pid, signal.SIGKILL), process.kill):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()
    process.stdout.close()


def trial_run(level: str) -> str | None:
    """None when the whole chain works under `level` (isolation, limits, seccomp, probes), else why not."""
    try:
        result = run_python("def answer():\n    return 42", ["assert answer() == 42"], timeout=30, level=level)
    except OSError as err:
        return str(err)
    return None if result.passed == 1 else f"a trial run failed ({result.error})"


def requested_level() -> str:
    requested = os.environ.get(ENV_VAR, "auto")
    if requested not in ("auto", *LEVELS):
        raise SandboxUnavailable(f"{ENV_VAR}={requested!r}: use auto, bubblewrap, namespaces or unisolated")
    return requested


@functools.cache
def level_works(level: str) -> str | None:
    """None when a trial run under `level` works here, else why not."""
    if level == "bubblewrap" and shutil.which("bwrap") is None:
        return "bwrap is not installed (apt install bubblewrap)"
    if level == "namespaces" and os.geteuid() != 0:
        return "the kit's own launcher needs root"
    return trial_run(level)


def active_level() -> str:
    """The level model code runs under here; raises SandboxUnavailable with what to do when there is none."""
    requested = requested_level()
    if requested != "auto":
        candidates = (requested,)
    elif os.geteuid() == 0:  # as root, the launcher's nobody is a real unprivileged user; bwrap's is host root
        candidates = ("namespaces", "bubblewrap")
    else:
        candidates = ("bubblewrap", "namespaces")
    reasons = {}
    for level in candidates:
        reasons[level] = level_works(level)
        if reasons[level] is None:
            return level
    why = "; ".join(f"{level}: {reason}" for level, reason in reasons.items())
    raise SandboxUnavailable(
        f"code rewards run model-written code, and no operating-system isolation works here ({why}). "
        "Install bubblewrap (apt install bubblewrap) or run as root; or, knowing that the model's code can then "
        "read every file your user can (and write them, on a kernel without Landlock), set code_isolation: unisolated")


def describe_active_level() -> str:
    return describe(active_level())
