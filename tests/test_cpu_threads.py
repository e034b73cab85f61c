"""kit.cpu_threads: counting other programs' threads, the choice, and re-counting during a run."""

from __future__ import annotations

import subprocess
import time

import pytest
import torch

from kit import cpu_threads
from kit.cpu_threads import MIN_GAP_SECONDS, RECHECK_SECONDS, ThreadChoice, ThreadGovernor


@pytest.fixture(autouse=True)
def restore_threads(monkeypatch):
    # A vLLM CPU engine loaded by an earlier test swaps torch.set_num_threads for good (the kit then leaves
    # threads alone, as it should in a run); these tests need torch's own function, whatever ran before.
    monkeypatch.setattr(torch, "set_num_threads", torch._C.set_num_threads)
    before = torch.get_num_threads()
    yield
    cpu_threads.stop()
    torch._C.set_num_threads(before)


def fake_proc(tmp_path, procs_running: int, my_states: list[str]):
    (tmp_path / "stat").write_text(f"cpu  1 2 3\nprocs_running {procs_running}\nprocs_blocked 0\n")
    for i, state in enumerate(my_states):
        task = tmp_path / "self" / "task" / str(100 + i)
        task.mkdir(parents=True)
        (task / "stat").write_text(f"{100 + i} (a name) with spaces) {state} 1 2 3\n")
    return tmp_path


def test_running_threads_counts_the_machine_and_this_process(tmp_path):
    proc = fake_proc(tmp_path, 5, ["R", "S", "R", "S"])
    assert cpu_threads.running_threads(proc) == (5, 2)


@pytest.mark.parametrize(("cores", "others", "threads"), [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.5, 1), (2, 1.0, 1), (2, 3.0, 1), (8, 2.2, 6), (1, 0.0, 1),
])
def test_threads_for_leaves_the_busy_cores(cores, others, threads):
    assert cpu_threads.threads_for(cores, others) == threads


def test_a_busy_program_is_counted():
    """A real `yes` beside this process: its thread is runnable all the time, so it counts about one. Other
    programs come and go on a shared machine (CI once read 0.8 threads busy before `yes` started, from a process a
    test had just ended), so the busy reading is compared with the quiet one around it, a few times over."""
    seen = []
    for _ in range(3):
        quiet = cpu_threads.other_running_threads()
        busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
        try:
            time.sleep(0.2)
            counted = cpu_threads.other_running_threads()
        finally:
            busy.kill()
            busy.wait()
        seen.append((quiet, counted))
        if counted >= quiet + 0.7:
            return
    raise AssertionError(f"`yes` was never counted as a busy thread (quiet, with it): {seen}")


def test_start_applies_and_says_the_choice(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(cpu_threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(cpu_threads, "other_running_threads", lambda: 1.0)
    lines = []
    choice = cpu_threads.start("auto", say=lines.append)
    assert choice.threads == 1 and torch.get_num_threads() == 1
    assert lines == [choice.line()] and "1 torch thread(s) on 2 core(s)" in lines[0]
    record = cpu_threads.record("auto")
    assert record["setting"] == "auto" and record["threads"] == 1 and record["changes"] == 0


def test_a_number_in_the_config_or_the_environment_is_kept(monkeypatch):
    monkeypatch.setattr(cpu_threads, "other_running_threads", lambda: pytest.fail("counted"))
    assert cpu_threads.chosen(1).threads == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    choice = cpu_threads.chosen("auto")
    assert choice.threads == 1 and "OMP_NUM_THREADS" in choice.reason


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def governor(threads: int, counts: list[float]):
    clock, said = Clock(), []
    g = ThreadGovernor(ThreadChoice(threads, 2, 0.0, "start"), clock=clock, count=lambda: counts.pop(0),
                       say=said.append)
    return g, clock, said


def steps(g, clock, seconds: float, n: int):
    for _ in range(n):
        clock.now += seconds
        g.step_finished(seconds)


def test_a_slow_step_recounts_and_drops_to_the_free_cores():
    g, clock, said = governor(2, [1.0])
    steps(g, clock, 0.4, 20)  # 8 s of even steps: no re-count (the counter would raise on an empty list)
    steps(g, clock, 1.2, 1)
    assert g.choice.threads == 1 and torch.get_num_threads() == 1 and g.changes == 1
    assert said and said[0].startswith("cpu: now 1 torch thread(s)")


def test_held_back_it_recounts_now_and_then_and_returns_to_every_core():
    g, clock, said = governor(1, [1.0, 0.0])
    steps(g, clock, 0.5, int(RECHECK_SECONDS / 0.5) - 1)
    assert g.choice.threads == 1 and not said  # not yet: the first re-count comes after RECHECK_SECONDS
    steps(g, clock, 0.5, 1)
    assert g.choice.threads == 1 and not said  # counted: still busy
    steps(g, clock, 0.5, int(RECHECK_SECONDS / 0.5))
    assert g.choice.threads == 2 and torch.get_num_threads() == 2 and g.changes == 1


def test_slow_steps_recount_at_most_every_min_gap():
    g, clock, _ = governor(2, [0.0])
    steps(g, clock, 0.4, 5)
    steps(g, clock, 2.0, int(MIN_GAP_SECONDS / 2.0) + 1)  # a second count would pop an empty list
    assert g.choice.threads == 2


def test_a_fixed_choice_never_recounts():
    g = ThreadGovernor(ThreadChoice(2, 2, None, "set"), count=lambda: pytest.fail("counted"), fixed=True)
    for seconds in (0.1, 0.1, 0.1, 10.0, 10.0):
        g.step_finished(seconds)


def test_a_vllm_cpu_engine_keeps_its_threads(monkeypatch):
    """vLLM's CPU worker swaps torch.set_num_threads for a function that warns: the kit leaves it be."""
    monkeypatch.setattr(torch, "set_num_threads", lambda n: pytest.fail("called vLLM's stand-in"))
    assert cpu_threads.set_torch_threads(1) is False
