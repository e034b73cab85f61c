"""The kit's own namespace sandbox, for machines where we are root and bubblewrap is not installed.

Run as `python -I -S namespaces.py REQUEST_JSON -- COMMAND...` by root. It does what bubblewrap does
for the kit's needs, with the kernel's namespaces directly:
  - new mount, PID, network (no interfaces), IPC and UTS namespaces;
  - a new root on a small tmpfs holding only read-only binds of the system's programs and libraries
    (and the Python the harness needs), /dev/null-like devices (read-only binds: they work, but their
    owner, mode and times cannot change) and a private writable /tmp;
  - the command runs as `nobody` with no capabilities, as PID 1 of the new PID namespace, and dies
    with this launcher: when the trainer kills the launcher, the kernel kills everything in the sandbox.
Stdlib only, and nothing here runs model code: the harness (started as COMMAND) does that after
installing its seccomp filter.
"""

import ctypes
import json
import os
import select
import signal
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
NOBODY = 65534
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}

libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source, target, fstype, flags, data=None) -> None:
    check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                     data and data.encode()), f"mount {target}")


def bind_read_only(source: str, root: str) -> None:
    """Bind `source` at the same path under `root`, read-only; symlinks (e.g. /bin -> usr/bin) are copied."""
    target = root + source
    if os.path.islink(source):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC)
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def build_root(root: str, request: dict) -> None:
    mount("none", "/", None, MS_REC | MS_PRIVATE)  # nothing we mount leaks back to the host
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    # /tmp first: a bind below it (a checkout in /tmp) must land on this tmpfs, not be hidden by it
    os.makedirs(f"{root}/tmp")
    mount("tmpfs", f"{root}/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={request['tmp_mb']}m,mode=1777")
    for path in request["read_only"]:
        if os.path.lexists(path):
            bind_read_only(path, root)
    for device in request["devices"]:
        target = root + device
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
        mount(device, target, None, MS_BIND)
        # read-only but still a device: writing to /dev/null works, chmod or utime on the host's node is EROFS
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
    os.chdir(root)
    check(libc.syscall(SYS_PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
    check(libc.umount2(b".", MNT_DETACH), "detach the old root")  # the host's file system is now gone
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def become_nobody(launcher_alive: int) -> None:
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)  # from root to another uid: every capability is dropped
    check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")  # setuid clears it
    # The launcher holds the pipe's other end: readable now means it died before the line above.
    if select.select([launcher_alive], [], [], 0)[0]:
        os._exit(1)
    os.close(launcher_alive)


def main() -> None:
    request = json.loads(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1:]
    check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")  # dies with the trainer
    launcher_alive, held_open = os.pipe()
    check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    child = os.fork()
    if child:
        os.close(launcher_alive)
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    os.close(held_open)
    try:
        build_root(request["root"], request)
        become_nobody(launcher_alive)
        os.chdir("/tmp")
        os.execve(command[0], command, {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
                                        "LANG": "C.UTF-8"})
    except OSError as err:
        sys.stderr.write(f"sandbox launcher: {err}\n")
        os._exit(125)


main()
