"""Runs inside the sandbox: limits, confinement, seccomp, then the model's code; plain values go back, never verdicts.

Started as `python -I -S harness.py` with a JSON request on stdin:
  {"mode": "probes", "code": ..., "probes": ["add(2, 3)", ...], "memory_mb": ..., "cpu_seconds": ...}
    runs the code, then evaluates each probe expression and writes one line per probe to stdout:
    {"value": <plain value>} or {"error": "..."}. Only exact built-in types cross (see `plain`); the
    parent compares them with the expected values, which never enter here.
  {"mode": "program", "code": ..., "stdin": ...}: runs the code as a program reading that stdin; its
    stdout is the answer, compared outside.
Its working folder is the run's own (a private /tmp, or under `unisolated` a scratch folder the trainer
removes): with Landlock, the only place it may write (confine.py).
Stdlib only: the kit is not installed inside the sandbox.
"""

import json
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import confine  # beside this file: the kit itself is not installed in the sandbox
import seccomp

FILE_LIMIT = 16 * 2**20


def limit_resources(memory_mb: int, cpu_seconds: int) -> None:
    memory = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


SCALARS = ((int, int.__int__), (float, float.__float__), (str, str.__str__))  # bool is checked first


def plain(value, depth=0):
    """The value as tagged JSON; only built-in types cross, a subclass as its built-in base.

    A namedtuple crosses as a tuple, a defaultdict as a dict, an IntEnum as an int: read through the
    base type's own methods (`str.__str__`, `dict.items`, ...), so nothing the subclass overrides
    (a rigged __eq__ or startswith) crosses, and the checker compares what the value really holds."""
    if depth > 50:
        raise ValueError("nested too deeply")
    if value is None or type(value) is bool:
        return value
    for kind, read in SCALARS:
        if isinstance(value, kind):
            return read(value)  # raises TypeError for an object that only claims the type (a spoofed __class__)
    if isinstance(value, bytes):
        return {"type": "bytes", "hex": bytes.hex(value)}
    if isinstance(value, list):
        return [plain(v, depth + 1) for v in list.__iter__(value)]
    for kind in (tuple, set, frozenset):
        if isinstance(value, kind):
            return {"type": kind.__name__, "items": [plain(v, depth + 1) for v in kind.__iter__(value)]}
    if isinstance(value, dict):
        return {"type": "dict", "items": [[plain(k, depth + 1), plain(v, depth + 1)] for k, v in dict.items(value)]}
    raise TypeError(f"returned a {type(value).__name__}; only built-in values can be checked")


def describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"[:300]


def run_probes(request: dict, out) -> None:
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(request["code"], "<completion>", "exec"), namespace)
    except BaseException as err:  # the code's own failure, SystemExit included, fails every probe
        failure = describe(err)
        for _ in request["probes"]:
            out.write(json.dumps({"error": failure}) + "\n")
        return
    for probe in request["probes"]:
        try:
            line = json.dumps({"value": plain(eval(probe, namespace))})
        except BaseException as err:
            line = json.dumps({"error": describe(err)})
        out.write(line + "\n")
        out.flush()


def run_program(request: dict) -> None:
    import io

    sys.stdin = io.StringIO(request["stdin"])
    exec(compile(request["code"], "<completion>", "exec"), {"__name__": "__main__"})


def lock_down() -> None:
    """From here on: no capabilities, no way into another process's memory, writes only here (Landlock), seccomp."""
    folder = os.getcwd()
    os.environ.update(HOME=folder, TMPDIR=folder)  # under unisolated, a scratch folder rather than the host's /tmp
    confine.confine_to(folder)
    seccomp.install()


def main() -> None:
    request = json.loads(sys.stdin.read())
    limit_resources(request["memory_mb"], request["cpu_seconds"])
    if request["mode"] == "probes":
        # Probe results go to a private copy of stdout; the code's own prints go nowhere.
        out = os.fdopen(os.dup(1), "w")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        lock_down()
        run_probes(request, out)
        out.flush()
    else:
        lock_down()
        run_program(request)
    sys.stdout.flush()


main()
