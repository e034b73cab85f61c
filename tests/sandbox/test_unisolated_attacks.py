"""Red team, as root, against `unisolated`: the level with no namespaces, where the trainer is the code's parent.

A second pass (after issue 30) found that code run there could overwrite the trainer's memory (a reward
forged in place), idle the trainer's CPU and disk scheduling, pass answers from one completion to the next
through a POSIX message queue, and write the host's files. Each attack runs under `unisolated` and (but for
the host's files, out of reach there by design) under every isolated level this machine offers; each must
fail and leave the trainer as it was.
"""

import ctypes
import os
import platform
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kit.sandbox import confine, execute, run_python
from tests.sandbox.conftest import ISOLATED, require
from tests.sandbox.test_attacks import HIDDEN_TEST, SECRET, attempt, score

HERE = Path(__file__).resolve().parent
SANDBOX = HERE.parents[1] / "kit" / "sandbox"
SYSCALLS = {  # raw numbers: Python wraps none of these
    "x86_64": {"sched_setattr": 314, "ioprio_set": 251, "ioprio_get": 252, "mq_open": 240, "mq_unlink": 241,
               "mq_timedsend": 242, "mq_timedreceive": 243},
    "aarch64": {"sched_setattr": 274, "ioprio_set": 30, "ioprio_get": 31, "mq_open": 180, "mq_unlink": 181,
                "mq_timedsend": 182, "mq_timedreceive": 183},
}[platform.machine()]
IOPRIO_WHO_PROCESS, IOPRIO_IDLE = 1, 3 << 13  # ioprio_set(which, who, class << 13 | data)


@pytest.fixture(params=["unisolated", *ISOLATED])
def any_level(request) -> str:
    return require(request.param)


def done(action: str, level: str) -> bool:
    """Whether `action` ran to its end inside the sandbox (see test_attacks.attempt)."""
    return score(attempt(action), level, ["assert solve(0) == 'done'"]) == 1


# --- the trainer's memory: the verdict, forged in place --------------------------------------------------

MEMORY_WRITES = {
    "/proc/<trainer>/mem": "fd = os.open(f'/proc/{os.getppid()}/mem', os.O_RDWR)\n"
                           "os.pwrite(fd, b'FORGED!!', {address})",
    "/proc/self/../<trainer>/mem": "fd = os.open(f'/proc/self/../{os.getppid()}/mem', os.O_WRONLY)\n"
                                   "os.pwrite(fd, b'FORGED!!', {address})",
    "/proc/<trainer>/task/<trainer>/mem": "fd = os.open(f'/proc/{os.getppid()}/task/{os.getppid()}/mem', os.O_RDWR)\n"
                                          "os.pwrite(fd, b'FORGED!!', {address})",
    "a descriptor of the trainer's, reopened for writing (another run's result pipe)": (
        "opened = []\nfor fd in os.listdir(f'/proc/{os.getppid()}/fd'):\n    try:\n"
        "        opened.append(os.open(f'/proc/{os.getppid()}/fd/{fd}', os.O_WRONLY))\n    except OSError:\n"
        "        pass\nassert opened"),
    "process_vm_writev": (
        "import ctypes\nclass iovec(ctypes.Structure):\n"
        "    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
        "data = ctypes.create_string_buffer(b'FORGED!!')\n"
        "local, remote = iovec(ctypes.addressof(data), 8), iovec({address}, 8)\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.process_vm_writev(os.getppid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == 8, "
        "ctypes.get_errno()"),
}


@pytest.mark.parametrize("attack", MEMORY_WRITES.values(), ids=MEMORY_WRITES.keys())
def test_the_trainers_memory_cannot_be_rewritten(attack, any_level):
    victim = ctypes.create_string_buffer(b"ORIGINAL")  # say, the reward the trainer is about to record
    action = "import os\n" + attack.replace("{address}", str(ctypes.addressof(victim)))
    assert not done(action, any_level)
    assert victim.raw[:8] == b"ORIGINAL"


@pytest.mark.serial  # an xdist worker's title overwrites the environment the file shows
def test_the_trainers_environment_is_out_of_reach_too(any_level):
    """The same kernel check guards /proc/<pid>/environ: the trainer's tokens stay its own. (That file holds the
    environment the process started with, which is why this looks for PATH, not a variable the test sets.)"""
    assert "PATH=" in Path(f"/proc/{os.getpid()}/environ").read_text(errors="replace")
    code = "import os\ndef solve(x):\n    return open(f'/proc/{os.getppid()}/environ', errors='replace').read()"
    assert score(code, any_level, ["assert 'PATH=' in solve(0)"]) == 0


VICTIM = """import ctypes, os, time
answer = ctypes.create_string_buffer(b'ORIGINAL')
open('where', 'w').write(f'{os.getpid()} {ctypes.addressof(answer)}')
time.sleep(2)
def solve(x):
    return answer.raw[:8].decode()"""
FORGER = """import glob, os, time
def forge():
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:  # the scratch folders of runs alive now, the victim's among them
        for where in glob.glob(os.path.join(os.path.dirname(os.getcwd()), 'kit-sandbox-*', 'where')):
            pid, address = map(int, open(where).read().split())
            with open(f'/proc/{pid}/mem', 'r+b', buffering=0) as mem:
                mem.seek(address)
                mem.write(b'FORGED!!')
            return 'done'
    return 'no victim found'
def solve(x):
    try:
        return forge()
    except OSError as err:
        return repr(err)"""


def test_one_run_cannot_rewrite_another_runs_answers(any_level):
    """Runs overlap (a reward's worker threads): a completion finds another's scratch folder and writes its memory."""
    with ThreadPoolExecutor(2) as pool:
        victim = pool.submit(run_python, VICTIM, ["assert solve(0) == 'ORIGINAL'"], 5.0, 512, any_level)
        time.sleep(0.5)
        forger = pool.submit(execute.run_probes, FORGER, ["assert solve(0) == 'done'"], 5.0, 512, any_level)
        assert victim.result().fraction == 1
        answer = forger.result().lines
    assert "done" not in str(answer)
    if any_level == "unisolated":  # it did find the victim there, and was refused
        assert "PermissionError" in str(answer), answer


ATTACH = """
import ctypes, os, sys
sys.path.insert(0, {sandbox!r})
import confine
{confinement}
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
data = ctypes.create_string_buffer(b'FORGED!!')
local, remote = iovec(ctypes.addressof(data), 8), iovec({address}, 8)
results = []
try:
    with open(f'/proc/{{os.getppid()}}/mem', 'r+b', buffering=0) as mem:
        mem.seek({address})
        results.append(mem.read(8) == b'ORIGINAL')
except OSError:
    results.append(False)
results.append(libc.process_vm_writev(os.getppid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == 8)
results.append(libc.ptrace(0x4206, os.getppid(), None, None) == 0)  # PTRACE_SEIZE: attaches without stopping it
print(results)
"""
CONFINEMENTS = {"none": "", "capabilities": "confine.drop_capabilities()", "landlock": "confine.landlock(os.getcwd())"}


def attach(confinement: str, tmp_path: Path) -> list[bool]:
    """[opened /proc/<parent>/mem, wrote it with process_vm_writev, attached with ptrace] from a child of
    this process that applied `confinement` and no seccomp filter: the kernel's own answer."""
    victim = ctypes.create_string_buffer(b"ORIGINAL")
    script = ATTACH.format(sandbox=str(SANDBOX), confinement=CONFINEMENTS[confinement],
                           address=ctypes.addressof(victim))
    done = subprocess.run([sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30, check=True)
    forged = victim.raw[:8] == b"FORGED!!"
    return [*eval(done.stdout), forged]


@pytest.mark.parametrize("confinement", ["capabilities", "landlock"])
def test_the_kernel_itself_refuses_the_trainers_memory_to_the_confined_harness(confinement, tmp_path):
    """Seccomp refuses ptrace and process_vm_writev, but not open(): each of the harness's own confinements
    makes the kernel refuse all three on its own, before any filter is installed."""
    if confinement == "capabilities" and os.geteuid() != 0:
        pytest.skip("dropping capabilities puts a process below its parent only when the parent has some (root)")
    if confinement == "landlock" and confine.landlock_abi() == 0:
        pytest.skip("this kernel has no Landlock")
    assert attach(confinement, tmp_path) == [False, False, False, False]


def yama_scope() -> int:
    """Yama's ptrace_scope (0 where Yama is absent): from 1, a process without CAP_SYS_PTRACE can attach only to
    its own descendants, never to its parent; at 3, no process can attach to any."""
    scope = Path("/proc/sys/kernel/yama/ptrace_scope")
    return int(scope.read_text()) if scope.exists() else 0


def test_control_an_unconfined_child_can_forge_its_parents_memory(tmp_path):
    if yama_scope() == 3 or (yama_scope() and os.geteuid() != 0):
        pytest.skip("Yama already refuses a child its parent's memory here")
    assert attach("none", tmp_path) == [True, True, True, True]


def forge_as(uid: int, trainer_dumpable: bool) -> int:
    """A forked 'trainer' running as `uid`, dumpable or not, and its child, the same user with no capability
    (as a non-root trainer's harness is), writing /proc/<trainer>/mem: 0 forged, 1 refused, 2 broken."""
    victim = ctypes.create_string_buffer(b"ORIGINAL")
    trainer = os.fork()
    if trainer == 0:  # no exec: this interpreter, already loaded, as another user
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            confine.set_dumpable(trainer_dumpable)  # a change of user has just cleared it
            attacker = os.fork()
            if attacker == 0:
                try:
                    os.pwrite(os.open(f"/proc/{os.getppid()}/mem", os.O_RDWR), b"FORGED!!", ctypes.addressof(victim))
                finally:
                    os._exit(0)
            os.waitpid(attacker, 0)
            os._exit(0 if victim.raw[:8] == b"FORGED!!" else 1)
        except BaseException:
            os._exit(2)
    return os.waitstatus_to_exitcode(os.waitpid(trainer, 0)[1])


def test_a_non_root_trainer_is_out_of_reach_while_it_is_undumpable():
    """Not root, the harness has no capability to drop below the trainer's: without Landlock, only the trainer's
    being non-dumpable (execute.Undumpable) keeps its memory closed to it. Checked as nobody, with a control."""
    if os.geteuid() != 0:
        pytest.skip("becoming another user needs root")
    if yama_scope():
        pytest.skip("Yama already refuses a child without capabilities its parent's memory here")
    assert forge_as(65534, trainer_dumpable=True) == 0
    assert forge_as(65534, trainer_dumpable=False) == 1


def test_the_trainer_is_undumpable_while_unisolated_code_runs_and_as_it_was_after(monkeypatch):
    seen = []
    read_capped = execute.read_capped
    monkeypatch.setattr(execute, "read_capped", lambda process, timeout: [
        seen.append(confine.dumpable()), read_capped(process, timeout)][1])
    assert confine.dumpable()
    assert run_python(f"def solve(x):\n    return {SECRET}", [HIDDEN_TEST], level=require("unisolated")).fraction == 1
    assert seen == [False] and confine.dumpable()


# --- the trainer's scheduling: a host process slowed to a crawl -----------------------------------------

def ioprio(pid: int) -> int:
    return ctypes.CDLL(None, use_errno=True).syscall(SYSCALLS["ioprio_get"], IOPRIO_WHO_PROCESS, pid)


def scheduling(pid: int) -> tuple:
    return os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority, os.getpriority(os.PRIO_PROCESS, pid), \
        ioprio(pid)


SCHEDULING = {
    "sched_setscheduler": "os.sched_setscheduler(os.getppid(), os.SCHED_IDLE, os.sched_param(0))",
    "sched_setparam": "os.sched_setparam(os.getppid(), os.sched_param(0))",
    "sched_setattr": ("import ctypes\nattr = (ctypes.c_uint32 * 12)(48, os.SCHED_IDLE)  # struct sched_attr\n"
                      "libc = ctypes.CDLL(None, use_errno=True)\n"
                      f"assert libc.syscall({SYSCALLS['sched_setattr']}, os.getppid(), attr, 0) == 0, "
                      "ctypes.get_errno()"),
    "ioprio_set": ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nassert libc.syscall("
                   f"{SYSCALLS['ioprio_set']}, {IOPRIO_WHO_PROCESS}, os.getppid(), {IOPRIO_IDLE}) == 0, "
                   "ctypes.get_errno()"),
    "setpriority": "os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
}


@pytest.mark.parametrize("attack", SCHEDULING.values(), ids=SCHEDULING.keys())
def test_the_trainers_scheduling_stays_as_it_was(attack, any_level):
    me = os.getpid()
    before = scheduling(me)
    try:
        assert not done("import os\n" + attack, any_level)
        assert scheduling(me) == before
    finally:  # a failing run must not leave the test process idle for the rest of the suite
        os.sched_setscheduler(me, before[0], os.sched_param(before[1]))
        os.setpriority(os.PRIO_PROCESS, me, before[2])
        ctypes.CDLL(None).syscall(SYSCALLS["ioprio_set"], IOPRIO_WHO_PROCESS, me, before[3])


def test_the_harness_may_still_read_its_own_scheduling(any_level):
    action = "import os\nos.sched_getscheduler(0)\nos.sched_getparam(0)\nos.getpriority(os.PRIO_PROCESS, 0)"
    assert done(action, any_level)


# --- a channel between completions: a POSIX message queue -------------------------------------------------

QUEUE = b"kit-red-team"  # the raw syscall takes the name without glibc's leading slash
SEND = f"""import ctypes, os
libc = ctypes.CDLL(None)
queue = libc.syscall({SYSCALLS['mq_open']}, {QUEUE!r}, os.O_CREAT | os.O_WRONLY, 0o600, None)
libc.syscall({SYSCALLS['mq_timedsend']}, queue, b'{SECRET}', {len(str(SECRET))}, 0, None)
def solve(x):
    return {SECRET}"""
RECEIVE = f"""import ctypes, os
libc = ctypes.CDLL(None)
queue = libc.syscall({SYSCALLS['mq_open']}, {QUEUE!r}, os.O_RDONLY | os.O_NONBLOCK, 0, None)
message = ctypes.create_string_buffer(1 << 16)
size = libc.syscall({SYSCALLS['mq_timedreceive']}, queue, message, len(message), None, None)
def solve(x):
    return int(message.raw[:size])"""


def test_no_channel_between_runs_through_a_message_queue(any_level):
    """A right completion leaves its answer in a queue; the next, wrong one reads it back."""
    try:
        assert score(SEND, any_level) == 1
        assert score(RECEIVE, any_level) == 0
        assert not done(f"import ctypes\nassert ctypes.CDLL(None).syscall({SYSCALLS['mq_open']}, {QUEUE!r}, "
                        "0o100 | 2, 0o600, None) >= 0", any_level)  # O_CREAT | O_RDWR
    finally:
        ctypes.CDLL(None).syscall(SYSCALLS["mq_unlink"], QUEUE)


# --- the host's files -------------------------------------------------------------------------------------

def host_changes(victim: Path, made: Path) -> dict[str, str]:
    """Ways to change a host file (`victim`) or make one (`made`) outside the run's own folder."""
    v, m = str(victim), str(made)
    return {
        "create a file": f"open({m!r}, 'w').write('x')",
        "append to a file": f"open({v!r}, 'a').write('x')",
        "truncate by path": f"import os\nos.truncate({v!r}, 0)",
        "make a folder": f"import os\nos.mkdir({m!r})",
        "a symlink": f"import os\nos.symlink('/etc/passwd', {m!r})",
        "move it into the run's own folder": f"import os\nos.rename({v!r}, 'mine')",
        "remove it": f"import os\nos.remove({v!r})",
        "chmod": f"import os\nos.chmod({v!r}, 0o777)",
        "chmod through a read-only descriptor": f"import os\nos.chmod(os.open({v!r}, os.O_RDONLY), 0o777)",
        "chown": f"import os\nos.chown({v!r}, 65534, 65534)",
        "set its times": f"import os\nos.utime({v!r}, ({SECRET}, {SECRET}))",
        "an extended attribute": f"import os\nos.setxattr({v!r}, 'user.answer', b'{SECRET}')",
        "chattr through a read-only descriptor": (
            f"import fcntl, os, struct\nfd = os.open({v!r}, os.O_RDONLY)\n"
            f"flags = struct.unpack('l', fcntl.ioctl(fd, {GETFLAGS}, bytes(8)))[0]\n"
            f"fcntl.ioctl(fd, {SETFLAGS}, struct.pack('l', flags | {NOATIME}))"),
    }


GETFLAGS, SETFLAGS, NOATIME = 0x80086601, 0x40086602, 0x80  # FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, chattr +A


def file_state(path: Path) -> tuple:
    status = path.stat()
    try:
        import fcntl

        with open(path, "rb") as file:
            flags = fcntl.ioctl(file, GETFLAGS, bytes(8))
    except OSError:  # a file system without chattr flags
        flags = None
    return path.read_bytes(), status.st_mode, status.st_uid, status.st_mtime_ns, os.listxattr(path), flags


@pytest.mark.parametrize("attack", sorted(host_changes(Path("/v"), Path("/m"))))
def test_unisolated_code_changes_no_host_file(attack, tmp_path):
    if confine.landlock_abi() == 0:
        pytest.skip("without Landlock, unisolated says that the code can write the host's files")
    victim, made = tmp_path / "victim", tmp_path / "made"
    victim.write_text("the host's")
    before = file_state(victim)
    assert not done(host_changes(victim, made)[attack], require("unisolated"))
    assert file_state(victim) == before and sorted(tmp_path.iterdir()) == [victim]


@pytest.mark.parametrize("attack", sorted(host_changes(Path("/v"), Path("/m"))))
def test_control_the_host_changes_work_outside_the_sandbox(attack, tmp_path):
    if attack == "chown" and os.geteuid() != 0:
        pytest.skip("only root may give a file away")
    victim, made = tmp_path / "victim", tmp_path / "made"
    victim.write_text("the host's")
    before = file_state(victim)
    subprocess.run([sys.executable, "-c", host_changes(victim, made)[attack]], cwd=tmp_path, timeout=30, check=True)
    assert not victim.exists() or file_state(victim) != before or made.exists()


def test_the_code_may_still_write_in_its_own_folder(any_level):
    action = textwrap.dedent("""\
        import os, tempfile
        open('answer.txt', 'w').write('42')
        os.mkdir('sub')
        os.rename('answer.txt', 'sub/answer.txt')
        assert open('sub/answer.txt').read() == '42'
        with tempfile.NamedTemporaryFile() as scratch:
            scratch.write(b'x')
        open('/dev/null', 'w').write('x')""")
    assert done(action, any_level)


def test_a_correct_solution_still_scores_unisolated():
    assert run_python(f"def solve(x):\n    return {SECRET}", [HIDDEN_TEST], level=require("unisolated")).fraction == 1


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("the sandbox is Linux-only")
