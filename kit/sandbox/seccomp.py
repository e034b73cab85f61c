"""A seccomp filter for model-written code: no new processes, sockets, namespaces or kernel knobs.

The harness installs it on itself just before it runs the model's code; a seccomp filter can never be
removed, and `no_new_privs` (set with it) means no later exec can gain privileges. Calls that are
refused fail with EPERM, which Python turns into an ordinary exception. That includes clone: no new
processes and no threads either, because a thread made with raw clone flags can get a file table of
its own (past RLIMIT_NOFILE) and threads count against no limit when the sandbox's user is root on the
host. File locks, leases, inotify and dnotify watches, memfds and System V IPC are refused too: the
read-only binds are the host's own files, and memfd pages and SysV shared memory or message queues escape
RLIMIT_AS. So are scheduling calls (sched_setscheduler, sched_setparam, sched_setattr, ioprio_set,
setpriority: under `unisolated`, which shares the trainer's PID namespace, they would idle the trainer),
POSIX message queues (under `unisolated`, a channel from one completion to the next), and changes to a
file's metadata (chmod, chown, times, extended attributes, chattr flags) and truncate by path, which
Landlock (confine.py) does not cover.

This module is stdlib-only because it is imported inside the sandbox, where the kit is not installed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

# Syscall numbers per architecture (checked against the kernel headers in tests/sandbox/test_seccomp.py).
REFUSED = {
    "x86_64": {
        "socket": 41, "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "kill": 62, "tkill": 200,
        "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
        "unshare": 272, "setns": 308, "setsid": 112, "setpgid": 109, "prctl": 157, "mknod": 133,
        "mknodat": 259, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "bpf": 321, "perf_event_open": 298, "keyctl": 250, "add_key": 248,
        "request_key": 249, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438,
        "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "syslog": 103, "quotactl": 179,
        "open_by_handle_at": 304, "name_to_handle_at": 303, "kcmp": 312, "fanotify_init": 300,
        "personality": 135, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "clone": 56, "clone3": 435, "memfd_create": 319,
        "memfd_secret": 447, "inotify_init": 253, "inotify_init1": 294, "inotify_add_watch": 254, "flock": 73,
        "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66,
        "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "setpriority": 141,
        "socketpair": 53, "sched_setparam": 142, "sched_setscheduler": 144, "sched_setattr": 314,
        "ioprio_set": 251, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243,
        "mq_notify": 244, "mq_getsetattr": 245, "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452,
        "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260, "utime": 132, "utimes": 235, "futimesat": 261,
        "utimensat": 280, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197,
        "lremovexattr": 198, "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466, "truncate": 76,
    },
    "aarch64": {
        "socket": 198, "execve": 221, "execveat": 281, "kill": 129, "tkill": 130, "rt_sigqueueinfo": 138,
        "rt_tgsigqueueinfo": 240, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268,
        "setsid": 157, "setpgid": 154, "prctl": 167, "mknodat": 33, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106, "bpf": 280,
        "perf_event_open": 241, "keyctl": 219, "add_key": 217, "request_key": 218, "userfaultfd": 282,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "pidfd_open": 434,
        "pidfd_send_signal": 424, "pidfd_getfd": 438, "reboot": 142, "swapon": 224, "swapoff": 225,
        "acct": 89, "syslog": 116, "quotactl": 60, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "kcmp": 272, "fanotify_init": 262, "personality": 92, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "clone": 220,
        "clone3": 435, "memfd_create": 279, "memfd_secret": 447, "inotify_init1": 26, "inotify_add_watch": 27,
        "flock": 32, "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190, "semctl": 191,
        "semtimedop": 192, "semop": 193, "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197,
        "setpriority": 140, "socketpair": 199, "sched_setparam": 118, "sched_setscheduler": 119,
        "sched_setattr": 274, "ioprio_set": 30, "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182,
        "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185, "fchmod": 52, "fchmodat": 53,
        "fchmodat2": 452, "fchownat": 54, "fchown": 55, "utimensat": 88, "setxattr": 5, "lsetxattr": 6,
        "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16, "setxattrat": 463,
        "removexattrat": 466, "truncate": 45,
    },
}
# Allowed only on the harness's own process (first argument 0, or for tgkill its own pid): under `unisolated`
# there is no PID namespace, and these would signal, re-limit or pin the host's other processes of this user.
SELF_ONLY = {"x86_64": {"tgkill": 234, "prlimit64": 302, "sched_setaffinity": 203},
             "aarch64": {"tgkill": 131, "prlimit64": 261, "sched_setaffinity": 122}}
FCNTL = {"x86_64": 72, "aarch64": 25}
# fcntl's record locks (F_GETLK..F_SETLKW, F_OFD_*): a lock on a read-only bind would hold up the host; a lease
# (F_SETLEASE) on a system file stalls every program the host starts that opens it; F_NOTIFY watches its folders.
# F_SETOWN, F_SETSIG and F_SETOWN_EX would aim SIGIO at another process.
FCNTL_REFUSED = (5, 6, 7, 8, 10, 15, 36, 37, 38, 1024, 1026)
IOCTL = {"x86_64": 16, "aarch64": 29}
# ioctls that change a file through a read-only descriptor, for its owner: FS_IOC_SETFLAGS and FS_IOC32_SETFLAGS
# (chattr), FS_IOC_FSSETXATTR, FS_IOC_SETVERSION and FS_IOC32_SETVERSION, FS_IOC_ENABLE_VERITY (read-only for good).
IOCTL_REFUSED = (0x40086602, 0x40046602, 0x401C5820, 0x40087602, 0x40047602, 0x40806685)
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000  # x86_64 also accepts x32 syscall numbers; refuse them all

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
LOAD_WORD, JUMP_EQ, JUMP_GE, RETURN = 0x20, 0x15, 0x35, 0x06
ALLOW, KILL_PROCESS, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
NR_OFFSET, ARCH_OFFSET, ARG0_OFFSET, ARG1_OFFSET = 0, 4, 16, 24  # struct seccomp_data (little-endian)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def build_filter(arch: str, pid: int = 0) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jump-if-true, jump-if-false, k) instructions; `pid` is the process it is for."""
    refuse = ERRNO | errno.EPERM
    program = [
        (LOAD_WORD, 0, 0, ARCH_OFFSET),
        (JUMP_EQ, 1, 0, AUDIT_ARCH[arch]),
        (RETURN, 0, 0, KILL_PROCESS),  # a foreign-architecture syscall: the numbers below would not apply
        (LOAD_WORD, 0, 0, NR_OFFSET),
    ]
    if arch == "x86_64":
        program += [(JUMP_GE, 0, 1, X32_SYSCALL_BIT), (RETURN, 0, 0, refuse)]
    for number in sorted(REFUSED[arch].values()):
        program += [(JUMP_EQ, 0, 1, number), (RETURN, 0, 0, refuse)]
    for name, number in sorted(SELF_ONLY[arch].items()):
        program += only_on_self(number, pid if name == "tgkill" else 0, refuse)
    program += refuse_commands(FCNTL[arch], FCNTL_REFUSED, refuse)
    program += refuse_commands(IOCTL[arch], IOCTL_REFUSED, refuse)
    return program + [(RETURN, 0, 0, ALLOW)]  # everything else


def refuse_commands(number: int, commands: tuple[int, ...], refuse: int) -> list[tuple[int, int, int, int]]:
    """Syscall `number` is refused with one of `commands` as its second argument (read as the kernel does, its low
    32 bits) and allowed with any other (fcntl's F_GETFD, ...)."""
    program = [(JUMP_EQ, 0, 2 * len(commands) + 2, number),  # another syscall: on to the next check
               (LOAD_WORD, 0, 0, ARG1_OFFSET)]
    for command in commands:
        program += [(JUMP_EQ, 0, 1, command), (RETURN, 0, 0, refuse)]
    return program + [(RETURN, 0, 0, ALLOW)]


def only_on_self(number: int, allowed: int, refuse: int) -> list[tuple[int, int, int, int]]:
    """Syscall `number` passes only when its 64-bit first argument is `allowed`; otherwise it is refused."""
    return [(JUMP_EQ, 0, 6, number),  # another syscall: on to the next check
            (LOAD_WORD, 0, 0, ARG0_OFFSET + 4), (JUMP_EQ, 0, 3, 0),  # the high word must be 0
            (LOAD_WORD, 0, 0, ARG0_OFFSET), (JUMP_EQ, 0, 1, allowed),
            (RETURN, 0, 0, ALLOW), (RETURN, 0, 0, refuse)]


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def install() -> None:
    """Apply the filter to this process and every thread it starts from now on; raises OSError if refused."""
    if platform.machine() not in REFUSED:
        raise OSError(f"no seccomp syscall table for {platform.machine()} (the kit has x86_64 and aarch64)")
    program = build_filter(platform.machine(), os.getpid())
    instructions = (SockFilter * len(program))(*[SockFilter(*step) for step in program])
    fprog = SockFprog(len(program), instructions)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
