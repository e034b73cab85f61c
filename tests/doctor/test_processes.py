"""kit.doctor.processes: one check, one fresh process, its failure told by its own exception."""

import subprocess
import sys
import time

import pytest

from kit.doctor.processes import FAIL, PASS, SKIP, Check, Driver, exit_code, failed
from tests.conftest import REPO


def test_a_failed_worker_reports_its_exception_and_log(tmp_path):
    log = tmp_path / "w.log"
    log.write_text("Unsloth: an error message that is only a warning\nTraceback (most recent call last):\n"
                   "  File \"x.py\", line 1\nKeyError: 'a'\n\nDuring handling of the above exception:\n\n"
                   "Traceback (most recent call last):\n  File \"y.py\", line 2\nValueError: bad shape\n"
                   "  more of the message\nteardown noise\n")
    result = failed("exit code 1", log)
    assert result["status"] == FAIL and result["reason"] == "exit code 1: ValueError: bad shape"
    assert result["log_tail"][-1] == "teardown noise"
    assert failed("timed out after 5 s", tmp_path / "never-written.log")["reason"] == "timed out after 5 s"

def test_a_worker_past_its_time_is_stopped_and_failed(tmp_path):
    driver = Driver(tmp_path, timeout_s=1, total=1)
    started = time.perf_counter()
    code = driver.wait_for([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "slow.log")
    assert code is None and time.perf_counter() - started < 30

def test_sigterm_to_the_check_stops_its_running_worker(tmp_path):
    """A timeout or scheduler stopping the check must not leave a worker computing on its own."""
    import os
    import signal

    script = (f"import sys; sys.path.insert(0, {str(REPO)!r}); from pathlib import Path\n"
              "from kit.doctor.processes import Driver, exit_on_sigterm\n"
              "exit_on_sigterm()\n"
              f"Driver(Path({str(tmp_path)!r}), timeout_s=300, total=1).wait_for(\n"
              "    [sys.executable, '-c', 'import os, time; print(os.getpid(), flush=True); time.sleep(300)'],\n"
              f"    Path({str(tmp_path / 'worker.log')!r}))\n")
    check = subprocess.Popen([sys.executable, "-c", script])
    log = tmp_path / "worker.log"
    deadline = time.time() + 60
    while not (log.exists() and log.read_text().strip()) and time.time() < deadline:
        time.sleep(0.2)
    worker = int(log.read_text().split()[0])
    check.send_signal(signal.SIGTERM)
    assert check.wait(30) == 128 + signal.SIGTERM
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)  # the worker is gone (killed with its process group, and reaped)

def test_exit_code_is_non_zero_only_for_failures():
    assert exit_code([Check("a", PASS), Check("b", SKIP, reason="no CUDA device")]) == 0
    assert exit_code([Check("a", PASS), Check("b", FAIL, reason="x")]) == 1
