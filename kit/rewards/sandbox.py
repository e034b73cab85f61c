"""Running model-written Python safely: a fresh interpreter per run, with limits and no way out.

Each run is a separate `python -I -S` process (nothing of the trainer's process: no modules, no
environment, no open files) in a new session, started in a temporary folder that is deleted after.
Before the model's code runs, the child:
  - caps its address space (memory), CPU seconds, file size and core dumps with setrlimit;
  - moves into a new, empty network namespace where the kernel allows it (root, or user namespaces);
  - installs an audit hook (PEP 578) that refuses sockets, new processes (fork, exec, spawn,
    subprocess, os.system), ctypes, frame inspection, and any write outside its folder.
The parent kills the whole process group at the wall-clock limit. Results come back on stdout after
a per-run random marker, so printed text cannot pose as a result (code that digs the marker out of
the interpreter's memory could; the kit does not claim more than that).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

HARNESS = r'''
import json, os, resource, sys
payload = json.loads(sys.stdin.read())
limit = payload["memory_mb"] * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_CPU, (payload["cpu_seconds"], payload["cpu_seconds"] + 1))
resource.setrlimit(resource.RLIMIT_FSIZE, (2**24, 2**24))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
try:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x40000000) != 0:  # CLONE_NEWNET: a network namespace with no interfaces
        libc.unshare(0x10000000 | 0x40000000)  # CLONE_NEWUSER too, where unprivileged namespaces are allowed
except Exception:
    pass  # the audit hook below still refuses every socket
root = os.path.realpath(os.getcwd())
refused = ("socket.", "os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
           "subprocess.", "os.kill", "os.killpg", "ctypes.", "os.chdir", "os.chroot", "resource.setrlimit", "pty.")
writes = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown",
          "os.link", "os.symlink", "shutil.rmtree", "os.utime")
def inside(path):
    if isinstance(path, int):
        return True
    return os.path.realpath(os.fsdecode(path)).startswith(root + os.sep)
def guard(event, args):
    if event.startswith(refused):
        raise PermissionError(f"sandbox: {event} is not allowed")
    if event == "open":
        path, mode, flags = args
        writing = (mode and any(c in mode for c in "wax+")) or (flags or 0) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC)
        if writing and not inside(path):
            raise PermissionError(f"sandbox: writing {path} is not allowed")
    elif event in writes and not all(inside(a) for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))):
        raise PermissionError(f"sandbox: {event} outside the sandbox folder is not allowed")
sys.addaudithook(guard)
def run(source, namespace):
    try:
        exec(compile(source, "<completion>", "exec"), namespace)
        return None
    except BaseException as err:
        return f"{type(err).__name__}: {err}"[:300]
def main(marker=payload.pop("marker")):  # the marker lives in this default, not in a global the code can read
    namespace = {"__name__": "__main__"}
    error = run(payload["code"], namespace)
    tests = payload["tests"]
    results = [run(test, namespace) for test in tests] if error is None else [error] * len(tests)
    sys.stdout.write("\n" + marker + json.dumps({"error": error, "results": results}) + "\n")
    sys.stdout.flush()
main()
'''


@dataclass
class SandboxResult:
    error: str | None  # the code itself failed (raised, timed out, was killed)
    passed: int  # tests that ran without raising
    total: int
    timed_out: bool = False

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else float(self.error is None)


def run_python(code: str, tests: list[str] = (), timeout: float = 5.0, memory_mb: int = 512) -> SandboxResult:
    """Run `code`, then each test (e.g. an assert) in the same namespace; count the tests that pass."""
    tests = list(tests)
    marker = f"@@kit-{secrets.token_hex(8)}@@"
    payload = json.dumps({"marker": marker, "code": code, "tests": tests, "memory_mb": memory_mb,
                          "cpu_seconds": max(1, int(timeout) + 1)})
    folder = tempfile.mkdtemp(prefix="kit-sandbox-")
    env = {"PATH": "/usr/bin:/bin", "HOME": folder, "TMPDIR": folder, "LANG": "C.UTF-8"}
    try:
        process = subprocess.Popen([sys.executable, "-I", "-S", "-c", HARNESS], cwd=folder, env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   start_new_session=True, close_fds=True)
        try:
            stdout, _ = process.communicate(payload.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process)
            return SandboxResult(f"timed out after {timeout:g} s", 0, len(tests), timed_out=True)
        finally:
            kill_group(process)  # anything the code left running in its session
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return parse_result(stdout.decode(errors="replace"), marker, len(tests), process.returncode)


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def parse_result(stdout: str, marker: str, total: int, returncode: int | None) -> SandboxResult:
    if marker not in stdout:
        return SandboxResult(f"the process died (exit code {returncode})", 0, total)
    report = json.loads(stdout.rsplit(marker, 1)[1].splitlines()[0])
    passed = sum(r is None for r in report["results"])
    return SandboxResult(report["error"], passed, total)
