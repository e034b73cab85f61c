"""tests/hang_guard.py in a pytest of its own: a slow test fails alone, a stuck one is named as the run's last line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.conftest import REPO

INNER_TESTS = textwrap.dedent('''
    import signal
    import time

    import math_verify


    def test_a_slow_step():
        time.sleep(30)


    def test_a_slow_step_after_math_verify_took_the_alarm():
        assert math_verify.verify(math_verify.parse("$2$"), math_verify.parse("$2$"))  # signal.alarm, then alarm(0)
        time.sleep(30)


    def test_the_next_one():
        pass


    def test_stuck_where_python_never_runs_a_handler():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})  # as native code would be: the nudge waits
        time.sleep(30)
''')


def run_inner(tmp_path, *names: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    nodes = [f"test_inner.py::{name}" for name in names]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.hang_guard",
         "-o", "timeout=1", "-o", "timeout_method=thread", *nodes],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=os.environ | {"PYTHONPATH": str(REPO), "HANG_GUARD_GRACE_S": "2"})


def test_a_test_over_the_limit_fails_and_the_next_one_runs(tmp_path):
    run = run_inner(tmp_path, "test_a_slow_step", "test_a_slow_step_after_math_verify_took_the_alarm",
                    "test_the_next_one")
    assert "2 failed, 1 passed" in run.stdout, run.stdout + run.stderr
    failures = [line for line in run.stdout.splitlines() if line.startswith("E ")]  # not the summary, which a
    # wide terminal (CI's) prints whole and a narrow one cuts
    assert [line.split(maxsplit=1)[1] for line in failures] == \
        ["Failed: ran over its 1 s limit (tests/hang_guard.py); the run goes on"] * 2, run.stdout
    assert "time.sleep(30)" in run.stdout  # the failure shows where it was stuck


def test_a_test_that_cannot_be_failed_ends_the_run_and_is_named_last(tmp_path):
    run = run_inner(tmp_path, "test_stuck_where_python_never_runs_a_handler", "test_the_next_one")
    assert run.returncode == 1
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("test_inner.py::test_stuck_where_python_never_runs_a_handler ran over its 1 s limit"), \
        run.stdout
    assert "time.sleep(30)" in run.stdout  # the main thread's stack came first
    assert "passed" not in run.stdout
