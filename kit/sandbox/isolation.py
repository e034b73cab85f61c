"""The operating-system isolation levels of the sandbox, and the command line for each.

  bubblewrap   `bwrap` (a well-kept sandboxing tool) with new user, PID, network, mount, IPC, UTS and
               cgroup namespaces; the system read-only; a private 64 MB /tmp; no capabilities; uid nobody.
  namespaces   the kit's own launcher (kit/sandbox/namespaces.py) doing the same with the kernel's
               namespaces directly; needs root (as in Colab, Kaggle and most containers).
  unisolated   no namespaces at all: only what the harness does to itself (below). The model's code can
               read every file its user can; with Landlock it writes only in the run's scratch folder,
               without it (before Linux 5.13, or not enabled) wherever its user can. Used only when asked
               for by name.
Under every level the harness applies rlimits, drops every capability, makes itself non-dumpable, confines
its writes with Landlock where the kernel has it (kit/sandbox/confine.py) and installs a seccomp filter
(kit/sandbox/seccomp.py) before the model's code runs. `auto` (the default) takes the first of bubblewrap
and namespaces that works here (namespaces first when the trainer is root), and refuses to run model code
when neither does (kit.sandbox.execute.active_level).

Run by root, bwrap maps the sandbox's nobody to host root (without capabilities): the host's own device
nodes bound in would be that user's to chmod or touch, a channel between completions and a way to break
/dev/null for the host. So as root, bwrap gets device nodes of its own, made in the run's scratch
folder and removed with it, and the launcher's real nobody gets the host's nodes bound read-only.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from pathlib import Path

from kit.errors import KitError
from kit.sandbox import confine

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "harness.py"
LAUNCHER = HERE / "namespaces.py"
LEVELS = ("bubblewrap", "namespaces", "unisolated")
ENV_VAR = "KIT_CODE_ISOLATION"  # auto | bubblewrap | namespaces | unisolated (the run sets it from the config)
TMP_MB = 64
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache")
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
ENVIRONMENT = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
DESCRIPTIONS = {
    "bubblewrap": "bubblewrap: own user, PID, network, mount and IPC namespaces; read-only system; "
                  "private /tmp; no capabilities; seccomp; rlimits",
    "namespaces": "kernel namespaces (the kit's launcher): own PID, network, mount and IPC namespaces; "
                  "read-only system; private /tmp; user nobody; seccomp; rlimits",
    "unisolated": "UNISOLATED: seccomp, rlimits, no capabilities and Landlock only; the model's code can read "
                  "every file this user can, and write only in its own scratch folder",
}
UNISOLATED_WITHOUT_LANDLOCK = (
    "UNISOLATED: seccomp, rlimits and no capabilities only, and this kernel has no Landlock; the model's code can "
    "read and write every file this user can (when the user is not root, /proc/<pid>/mem of its other processes "
    "too: not the trainer's or the checker's)")


class SandboxUnavailable(KitError):
    pass


def describe(level: str) -> str:
    """What code run under `level` can reach, for the run's console."""
    if level == "unisolated" and confine.landlock_abi() == 0:
        return UNISOLATED_WITHOUT_LANDLOCK
    return DESCRIPTIONS[level]


def trainer_guard(level: str):
    """Around each run: under `unisolated`, which shares the trainer's user and namespaces, the trainer stays
    non-dumpable while the code runs (kit/sandbox/confine.py); under the other levels, nothing."""
    return confine.TRAINER if level == "unisolated" else contextlib.nullcontext()


def python_executable() -> str:
    return os.path.realpath(sys.executable)  # the base interpreter, not a venv's symlink to it


def read_only_paths() -> list[str]:
    """What the sandbox sees: the system's programs and libraries, this Python, and the harness."""
    python_home = {os.path.realpath(sys.base_prefix), os.path.dirname(python_executable())}
    return [*SYSTEM_PATHS, *sorted(python_home), str(HERE)]


def harness_command() -> list[str]:
    return [python_executable(), "-I", "-S", str(HARNESS)]


def command(level: str, scratch: Path) -> list[str]:
    """The argv that runs the harness under `level`; `scratch` is an empty folder the caller removes."""
    if level == "bubblewrap":
        return bubblewrap_command(scratch)
    if level == "namespaces":
        request = {"root": str(scratch), "read_only": read_only_paths(), "devices": DEVICES, "tmp_mb": TMP_MB}
        return [python_executable(), "-I", "-S", str(LAUNCHER), json.dumps(request), "--", *harness_command()]
    return harness_command()


def bubblewrap_command(scratch: Path) -> list[str]:
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--uid", "65534", "--gid", "65534",
            "--size", str(TMP_MB * 2**20), "--tmpfs", "/tmp"]  # first: binds below /tmp must land on it
    for path in read_only_paths():
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            argv += ["--ro-bind", path, path]
    # not bwrap's --dev, whose /dev (and /dev/shm) is a writable tmpfs the size of RAM
    for device, source in device_sources(scratch).items():
        argv += ["--dev-bind", source, device]
    argv += ["--remount-ro", "/", "--chdir", "/tmp"]
    return argv + harness_command()


def device_sources(scratch: Path) -> dict[str, str]:
    """What each of DEVICES is bound from: the host's node, or as root a private copy of it in `scratch`."""
    if os.geteuid() != 0:
        return {device: device for device in DEVICES}  # the sandbox's user owns nothing here: it cannot chmod them
    sources = {}
    for device in DEVICES:
        source = scratch / f"dev-{Path(device).name}"
        try:
            os.mknod(source, stat.S_IFCHR | 0o666, os.stat(device).st_rdev)  # the same driver, a node of its own
        except OSError as err:
            raise OSError(f"as root, bubblewrap needs device nodes of its own, and making one failed ({err})") from None
        os.chmod(source, 0o666)  # past the umask
        sources[device] = str(source)
    return sources
