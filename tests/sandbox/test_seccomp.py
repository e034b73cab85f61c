"""The seccomp filter's syscall numbers match the kernel headers, and the filter refuses what it should."""

import re
from pathlib import Path

import pytest

from kit.sandbox import seccomp

HEADERS = {"x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
           "aarch64": Path("/usr/include/asm-generic/unistd.h")}


@pytest.mark.parametrize("arch", sorted(HEADERS))
def test_syscall_numbers_match_the_kernel_headers(arch):
    if not HEADERS[arch].exists():
        pytest.skip(f"{HEADERS[arch]} is not installed")
    defined = {name: int(number) for name, number in
               re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)\b", HEADERS[arch].read_text())}
    ours = {**seccomp.REFUSED[arch], **seccomp.SELF_ONLY[arch], "fcntl": seccomp.FCNTL[arch],
            "ioctl": seccomp.IOCTL[arch]}
    newer = {name: number for name, number in ours.items() if name not in defined}  # than these headers
    assert all(number > max(defined.values()) for number in newer.values()), newer
    assert {name: defined[name] for name in ours if name in defined} == {n: ours[n] for n in ours if n not in newer}


@pytest.mark.parametrize("arch", sorted(seccomp.REFUSED))
def test_filter_checks_the_architecture_first_and_allows_by_default(arch):
    program = seccomp.build_filter(arch)
    assert program[1] == (seccomp.JUMP_EQ, 1, 0, seccomp.AUDIT_ARCH[arch])
    assert program[2] == (seccomp.RETURN, 0, 0, seccomp.KILL_PROCESS)
    assert program[-1] == (seccomp.RETURN, 0, 0, seccomp.ALLOW)
    assert len(program) < 4096  # the kernel's limit on a filter's length


def simulate(program, nr: int, arch: int, arg1: int = 0, arg0: int = 0) -> int:
    """Run the filter the way the kernel would on one syscall: enough of classic BPF for our filter."""
    data = {seccomp.NR_OFFSET: nr, seccomp.ARCH_OFFSET: arch, seccomp.ARG1_OFFSET: arg1,
            seccomp.ARG0_OFFSET: arg0 & 0xFFFFFFFF, seccomp.ARG0_OFFSET + 4: arg0 >> 32}
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == seccomp.RETURN:
            return k
        if code == seccomp.LOAD_WORD:
            accumulator, pc = data[k], pc + 1
            continue
        taken = {seccomp.JUMP_EQ: accumulator == k, seccomp.JUMP_GE: accumulator >= k}[code]
        pc += 1 + (jt if taken else jf)


def test_the_filter_refuses_processes_threads_locks_and_escapes_but_allows_ordinary_calls():
    program = seccomp.build_filter("x86_64")
    arch = seccomp.AUDIT_ARCH["x86_64"]
    eperm = seccomp.ERRNO | 1
    for name in ("fork", "clone", "clone3", "execve", "socket", "ptrace", "mount", "unshare", "setsid", "prctl",
                 "kill", "memfd_create", "inotify_init1", "flock"):
        assert simulate(program, seccomp.REFUSED["x86_64"][name], arch) == eperm, name
    for lock in (6, 7, 37):  # F_SETLK, F_SETLKW, F_OFD_SETLK
        assert simulate(program, 72, arch, arg1=lock) == eperm
    assert simulate(program, 72, arch, arg1=1) == seccomp.ALLOW  # F_GETFD
    for allowed in (0, 1, 2, 9, 60, 231):  # read, write, open, mmap, exit, exit_group
        assert simulate(program, allowed, arch) == seccomp.ALLOW
    assert simulate(program, 0x40000000 | 1, arch) == eperm  # x32 numbering
    assert simulate(program, 1, seccomp.AUDIT_ARCH["aarch64"]) == seccomp.KILL_PROCESS


def test_signals_limits_and_affinity_reach_only_the_harness_itself():
    """Issue 30: under `unisolated` there is no PID namespace; tgkill, prlimit64 and sched_setaffinity on another
    pid would reach the host's processes, setpriority(PRIO_USER) every process of the user."""
    program = seccomp.build_filter("x86_64", pid=4242)
    arch = seccomp.AUDIT_ARCH["x86_64"]
    eperm = seccomp.ERRNO | 1
    tgkill, prlimit, affinity = (seccomp.SELF_ONLY["x86_64"][n] for n in ("tgkill", "prlimit64", "sched_setaffinity"))
    assert simulate(program, tgkill, arch, arg0=4242) == seccomp.ALLOW
    assert simulate(program, tgkill, arch, arg0=4243) == eperm
    assert simulate(program, tgkill, arch, arg0=4242 + 2**32) == eperm  # the high word counts too
    for number in (prlimit, affinity):
        assert simulate(program, number, arch, arg0=0) == seccomp.ALLOW
        assert simulate(program, number, arch, arg0=1) == eperm
    for name in ("setpriority", "socketpair"):
        assert simulate(program, seccomp.REFUSED["x86_64"][name], arch) == eperm
    for command in (8, 10, 15):  # F_SETOWN, F_SETSIG, F_SETOWN_EX
        assert simulate(program, 72, arch, arg1=command) == eperm


def test_the_trainers_scheduling_message_queues_and_file_metadata_are_refused():
    """The second unisolated red team: idling the trainer, a channel through a POSIX message queue, and the
    changes to a host file that Landlock does not cover."""
    program = seccomp.build_filter("x86_64")
    arch = seccomp.AUDIT_ARCH["x86_64"]
    eperm = seccomp.ERRNO | 1
    for name in ("sched_setparam", "sched_setscheduler", "sched_setattr", "ioprio_set", "mq_open", "mq_unlink",
                 "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr", "chmod", "fchmod", "fchmodat",
                 "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime", "utimes", "futimesat", "utimensat",
                 "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "setxattrat",
                 "removexattrat", "truncate"):
        assert simulate(program, seccomp.REFUSED["x86_64"][name], arch) == eperm, name
    for allowed in (143, 145, 252, 77):  # sched_getparam, sched_getscheduler, ioprio_get, ftruncate
        assert simulate(program, allowed, arch) == seccomp.ALLOW
    for command in seccomp.IOCTL_REFUSED:  # chattr and friends through a read-only descriptor
        assert simulate(program, 16, arch, arg1=command) == eperm
    for command in (0x5401, 0x80086601, 0x541B):  # TCGETS (isatty), FS_IOC_GETFLAGS, FIONREAD
        assert simulate(program, 16, arch, arg1=command) == seccomp.ALLOW
