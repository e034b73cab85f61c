"""What the harness gives up before the model's code runs, besides the seccomp filter (seccomp.py).

Under `unisolated` the code runs as the trainer's own user, often root, in the trainer's own namespaces.
Seccomp refuses ptrace and process_vm_writev, but it cannot look at the path an open() names: a plain
open("/proc/<trainer>/mem", "r+b") would rewrite a reward in the trainer's memory, and a write to the
host's files looks like a write to the run's own folder. The kernel's own checks tell them apart:

  drop_capabilities  every capability, the bounding set included. Run by root, the harness then holds
                     fewer capabilities than the trainer, and the kernel refuses a process the memory
                     (/proc/<pid>/mem, process_vm_writev, ptrace) and /proc/<pid>/environ of a process
                     that has capabilities it lacks. Root's other powers go with them: raising its own
                     rlimits, real-time scheduling, reading other users' private files.
  set_dumpable       PR_SET_DUMPABLE 0: a process of the same user without CAP_SYS_PTRACE cannot open a
                     non-dumpable process's memory. The harness sets it on itself, so that one run cannot
                     reach another; the trainer sets it on itself while unisolated code runs
                     (kit/sandbox/execute.py), for a trainer that is not root and so has no capability
                     the harness could drop; the checker sets it too (kit/sandbox/checker.py).
  landlock           where the kernel has Landlock (Linux 5.13 and later, when enabled): writes only in the
                     run's own folder and to /dev/null, and the memory of no process outside the run, whoever
                     runs it. Without Landlock the code can write whatever its user can.

Stdlib only: the harness imports it inside the sandbox, where the kit is not installed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import threading

PR_SET_DUMPABLE, PR_GET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 3, 24, 38
CAPABILITY_VERSION_3 = 0x20080522  # linux/capability.h: two 32-bit words per set

# Landlock's syscalls (the same numbers on every architecture) and its filesystem rights that change something
# (linux/landlock.h); rights it is not told to handle stay allowed, so reading is untouched.
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION, RULE_PATH_BENEATH = 1, 1
WRITE_FILE = 1 << 1
CHANGES = WRITE_FILE | sum(1 << bit for bit in range(4, 13))  # remove dir/file, make char/dir/reg/sock/fifo/block/sym
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2 (links and renames across folders), ABI 3 (truncate, O_TRUNC)

libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
libc.syscall.restype = ctypes.c_long


def fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def set_dumpable(dumpable: bool) -> None:
    if libc.prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) != 0:
        raise fail("prctl(PR_SET_DUMPABLE)")


def dumpable() -> bool:
    return libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Empty every capability set of this process; raises OSError if the kernel refuses."""
    # The bounding set first, while CAP_SETPCAP is still held: root regains the bounding set on exec, which
    # seccomp refuses anyway. Without CAP_SETPCAP (not root, or already dropped) it cannot change, nor matter.
    for capability in range(64):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            if ctypes.get_errno() in (errno.EINVAL, errno.EPERM):  # past the kernel's last one; no CAP_SETPCAP
                break
            raise fail("prctl(PR_CAPBSET_DROP)")
    # Effective, permitted and inheritable to nothing (the ambient set follows permitted): always allowed.
    if libc.capset(ctypes.byref(CapHeader(CAPABILITY_VERSION_3, 0)), (CapData * 2)()) != 0:
        raise fail("capset")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where it has none (before Linux 5.13, or not enabled)."""
    return max(0, libc.syscall(CREATE_RULESET, None, 0, CREATE_RULESET_VERSION))


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock(folder: str) -> bool:
    """Allow writes only beneath `folder` and to /dev/null, from now on; False where the kernel has no Landlock."""
    abi = landlock_abi()
    if abi == 0:
        return False
    truncate = TRUNCATE if abi >= 3 else 0
    handled = CHANGES | (REFER if abi >= 2 else 0) | truncate
    ruleset = libc.syscall(CREATE_RULESET, ctypes.byref(RulesetAttr(handled)), ctypes.sizeof(RulesetAttr), 0)
    if ruleset < 0:
        raise fail("landlock_create_ruleset")
    try:
        allow(ruleset, folder, handled)
        if os.path.exists(os.devnull):
            allow(ruleset, os.devnull, WRITE_FILE | truncate)  # a file takes only a file's rights
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # Landlock's condition for an unprivileged process
            raise fail("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(RESTRICT_SELF, ruleset, 0) != 0:
            raise fail("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return True


def allow(ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = PathBeneathAttr(access, fd)
        if libc.syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise fail(f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def confine_to(folder: str) -> None:
    """All of the above, for the harness: non-dumpable, no capabilities, and (with Landlock) writes only in `folder`."""
    set_dumpable(False)
    drop_capabilities()
    landlock(folder)


class Undumpable:
    """This process non-dumpable while any of its `with` blocks is open, and as it was after.

    For the trainer while unisolated code runs: that code runs as the trainer's user, and when the user is not
    root the harness has no capability to drop that would set it below the trainer; without Landlock nothing
    else keeps it from /proc/<trainer>/mem. Counted, because runs overlap in a reward's worker threads."""

    def __init__(self):
        self.lock, self.open, self.was = threading.Lock(), 0, True

    def __enter__(self):
        with self.lock:
            if self.open == 0:
                self.was = dumpable()
                set_dumpable(False)
            self.open += 1

    def __exit__(self, *exc):
        with self.lock:
            self.open -= 1
            if self.open == 0:
                set_dumpable(self.was)


TRAINER = Undumpable()  # kit/sandbox/execute.py, around each unisolated run
