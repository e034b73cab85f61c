"""The first failure of a launched run, as each machine's launcher reports it (kit/train/launch/failures.py)."""

import threading
from datetime import timedelta

import pytest

from kit.train.launch import failures
from kit.train.launch.failures import first_failure, record_failure


@pytest.fixture(autouse=True)
def not_failing(monkeypatch):
    """Each test is a fresh process's rank: none has reported a failure of its own yet."""
    monkeypatch.setattr(failures, "failing", threading.Event())


def as_rank(monkeypatch, folder, rank: int, world: int = 2, local_world: int = 2, machine: int = 0):
    for name, value in {"WORLD_SIZE": world, "RANK": rank, "LOCAL_WORLD_SIZE": local_world, "GROUP_RANK": machine,
                        failures.FAILURES_ENV: folder}.items():
        monkeypatch.setenv(name, str(value))


def test_the_first_recorded_failure_wins(monkeypatch, tmp_path):
    as_rank(monkeypatch, tmp_path, 1)
    record_failure(RuntimeError("reward broke\nsecond line"))
    as_rank(monkeypatch, tmp_path, 0)
    record_failure(ConnectionError("peer closed"))  # the consequence, recorded later
    assert first_failure(tmp_path) == "rank 1: RuntimeError: reward broke"


def test_a_reason_quoting_what_a_model_wrote_is_recorded(monkeypatch, tmp_path, main_store):
    as_rank(monkeypatch, tmp_path, 1, local_world=1, machine=1)  # through the store too
    record_failure(RuntimeError("reward broke on '\ud800<answer>' \U0001f600"))
    assert first_failure(tmp_path) == "rank 1 (machine 1): RuntimeError: reward broke on '\\ud800<answer>' \U0001f600"


def test_no_failure_is_recorded_outside_a_launch(monkeypatch, tmp_path):
    monkeypatch.delenv(failures.FAILURES_ENV, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    record_failure(RuntimeError("x"))
    assert first_failure(tmp_path) is None


@pytest.fixture
def main_store(monkeypatch):
    """The run's store, as torchrun's agent keeps it on the main machine, on a free port of this host."""
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=10))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(store.port))
    return store


def test_a_failure_on_one_machine_is_named_by_the_others_launcher(monkeypatch, tmp_path, main_store):
    machine0, machine1 = tmp_path / "machine0", tmp_path / "machine1"
    machine0.mkdir(), machine1.mkdir()
    # one process per machine: rank 1 on machine 1 fails first; rank 0 on machine 0 fails after it, its peer gone
    as_rank(monkeypatch, machine1, 1, local_world=1, machine=1)
    record_failure(RuntimeError("reward broke"))
    as_rank(monkeypatch, machine0, 0, local_world=1, machine=0)
    record_failure(ConnectionError("Connection closed by peer"))
    assert first_failure(machine0) == first_failure(machine1) == "rank 1 (machine 1): RuntimeError: reward broke"
    assert main_store.get("kit/failures/2") == b"rank 0 (machine 0): ConnectionError: Connection closed by peer"


def test_a_store_out_of_reach_leaves_each_machine_its_own_first(monkeypatch, tmp_path):
    monkeypatch.setattr(failures, "STORE_TIMEOUT", timedelta(seconds=1))
    from kit.train.launch.launcher import free_port

    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))  # nothing listens there
    as_rank(monkeypatch, tmp_path, 0, local_world=1, machine=0)
    record_failure(ConnectionError("Connection closed by peer"))
    assert first_failure(tmp_path) == ("rank 0 (machine 0): ConnectionError: Connection closed by peer (the main "
                                       "machine's store was out of reach: a failure there may have come first; see "
                                       "its console)")


def watch(folder, done):
    thread = threading.Thread(target=failures.stop_on_first_failure, args=(folder, done), daemon=True)
    thread.start()
    return thread


def test_a_rank_ends_itself_when_a_rank_on_another_machine_has_failed(monkeypatch, tmp_path, main_store):
    exits = []
    monkeypatch.setattr(failures.os, "_exit", exits.append)  # the watcher's way out of a collective, recorded
    as_rank(monkeypatch, tmp_path, 0, local_world=1, machine=0)
    thread = watch(tmp_path, threading.Event())
    main_store.add("kit/failures", 1)
    main_store.set("kit/failures/1", "rank 1 (machine 1): RuntimeError: boom")
    thread.join(timeout=10)
    assert exits == [1]
    assert first_failure(tmp_path) == "rank 1 (machine 1): RuntimeError: boom"


def test_the_end_of_a_run_stops_the_watcher_without_ending_the_rank(monkeypatch, tmp_path, main_store):
    exits = []
    monkeypatch.setattr(failures.os, "_exit", exits.append)
    as_rank(monkeypatch, tmp_path, 0, local_world=1, machine=0)
    done = threading.Event()
    thread = watch(tmp_path, done)
    done.set()
    thread.join(timeout=10)
    assert not thread.is_alive() and exits == [] and first_failure(tmp_path) is None


def test_a_rank_whose_main_machine_is_gone_ends_after_a_grace_and_says_so(monkeypatch, tmp_path):
    from kit.train.launch.launcher import free_port

    exits = []
    monkeypatch.setattr(failures.os, "_exit", exits.append)
    monkeypatch.setattr(failures, "STORE_TIMEOUT", timedelta(seconds=1))
    monkeypatch.setattr(failures, "MAIN_GONE_GRACE_S", 0.1)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))  # the store's launcher has ended: nothing listens
    as_rank(monkeypatch, tmp_path, 1, local_world=1, machine=1)
    watch(tmp_path, threading.Event()).join(timeout=20)
    assert exits == [1]
    assert first_failure(tmp_path).startswith("the main machine's launcher ended (its store at 127.0.0.1:")

