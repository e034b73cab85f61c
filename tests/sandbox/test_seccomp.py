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
    ours = {**seccomp.REFUSED[arch], "clone": seccomp.CLONE[arch], "clone3": seccomp.CLONE3}
    assert {name: defined.get(name) for name in ours} == ours


@pytest.mark.parametrize("arch", sorted(seccomp.REFUSED))
def test_filter_checks_the_architecture_first_and_allows_by_default(arch):
    program = seccomp.build_filter(arch)
    assert program[1] == (seccomp.JUMP_EQ, 1, 0, seccomp.AUDIT_ARCH[arch])
    assert program[2] == (seccomp.RETURN, 0, 0, seccomp.KILL_PROCESS)
    assert program[-1] == (seccomp.RETURN, 0, 0, seccomp.ALLOW)
    assert len(program) < 4096  # the kernel's limit on a filter's length


def simulate(program, nr: int, arch: int, arg0: int = 0) -> int:
    """Run the filter the way the kernel would on one syscall: enough of classic BPF for our filter."""
    data = {seccomp.NR_OFFSET: nr, seccomp.ARCH_OFFSET: arch, seccomp.ARG0_OFFSET: arg0}
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == seccomp.RETURN:
            return k
        if code == seccomp.LOAD_WORD:
            accumulator, pc = data[k], pc + 1
            continue
        taken = {seccomp.JUMP_EQ: accumulator == k, seccomp.JUMP_GE: accumulator >= k,
                 seccomp.JUMP_SET: bool(accumulator & k)}[code]
        pc += 1 + (jt if taken else jf)


def test_the_filter_refuses_processes_and_escapes_but_allows_threads_and_ordinary_calls():
    program = seccomp.build_filter("x86_64")
    arch = seccomp.AUDIT_ARCH["x86_64"]
    eperm = seccomp.ERRNO | 1
    for name in ("fork", "execve", "socket", "ptrace", "mount", "unshare", "setsid", "prctl", "kill"):
        assert simulate(program, seccomp.REFUSED["x86_64"][name], arch) == eperm, name
    assert simulate(program, 56, arch, arg0=0x11) == eperm  # clone as fork: no CLONE_THREAD
    assert simulate(program, 56, arch, arg0=0x3D0F00) == seccomp.ALLOW  # pthread_create's flags
    assert simulate(program, seccomp.CLONE3, arch) == seccomp.ERRNO | 38  # ENOSYS: glibc falls back to clone
    for allowed in (0, 1, 2, 9, 60, 231):  # read, write, open, mmap, exit, exit_group
        assert simulate(program, allowed, arch) == seccomp.ALLOW
    assert simulate(program, 0x40000000 | 1, arch) == eperm  # x32 numbering
    assert simulate(program, 1, seccomp.AUDIT_ARCH["aarch64"]) == seccomp.KILL_PROCESS
