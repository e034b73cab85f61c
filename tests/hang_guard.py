"""A test past its time limit fails on its own and the run goes on; one that cannot be stopped is named last.

pytest-timeout's thread method ends the whole run at the first test past the limit, and the last lines it
prints are a thread's stack, not the test's name: one vLLM step that never finished in CI cost every test
after it, and the log's tail did not say which test it was. Its signal method keeps the run going but rides
on SIGALRM, which math-verify's own timeout takes over and cancels (signal.alarm(0)) in most reward tests.

So this guard takes over pytest-timeout's timer (same `timeout` setting) for tests run in the main thread:
- at the limit, a watchdog thread sends SIGUSR2 to the main thread, whose handler fails the test with the
  stack it was stuck in; teardown runs and so does the next test;
- a test stuck in native code never runs that handler: GRACE_S later the watchdog prints every thread's
  stack, then, as the run's last line, the test's name, and ends the run.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback

import pytest

GRACE_S = float(os.environ.get("HANG_GUARD_GRACE_S", "120"))
NUDGE = signal.SIGUSR2  # nothing the kit or its libraries run in-process handles it


class Watchdog(threading.Thread):
    def __init__(self, item, limit_s: float):
        super().__init__(name=f"hang guard: {item.nodeid}", daemon=True)
        self.item, self.limit_s = item, limit_s
        self.finished = threading.Event()

    def run(self) -> None:
        if self.finished.wait(self.limit_s):
            return
        signal.pthread_kill(threading.main_thread().ident, NUDGE)
        if not self.finished.wait(GRACE_S):
            end_the_run(self.item, self.limit_s)

    def stop(self) -> None:
        self.finished.set()
        self.join()


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    if settings.timeout <= 0 or threading.current_thread() is not threading.main_thread():
        return None  # pytest-timeout's own timer

    def fail_the_test(signum, frame):
        __tracebackhide__ = True
        pytest.fail(f"ran over its {settings.timeout:g} s limit (tests/hang_guard.py); the run goes on")

    previous = signal.signal(NUDGE, fail_the_test)
    watchdog = Watchdog(item, settings.timeout)
    watchdog.start()

    def cancel():  # pytest-timeout's pytest_timeout_cancel_timer calls it after teardown
        watchdog.stop()
        signal.signal(NUDGE, previous)

    item.cancel_timeout = cancel
    return True


def end_the_run(item, limit_s: float) -> None:
    """From the watchdog thread: the test did not stop when told to. Say where every thread is, then which test."""
    terminal = item.config.get_terminal_writer()
    try:
        capture = item.config.pluginmanager.getplugin("capturemanager")
        if capture:
            capture.suspend_global_capture(item)
        for ident, frame in sys._current_frames().items():
            if ident != threading.get_ident():
                terminal.sep("~", title=f"stack of thread {ident}")
                terminal.write("".join(traceback.format_stack(frame)[-25:]))
        terminal.sep("+", title="hang guard")
        terminal.line(f"{item.nodeid} ran over its {limit_s:g} s limit and did not stop in {GRACE_S:g} s more "
                      "when failed: the run ends here")
    finally:
        terminal.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
