"""Rank helpers: a plain process is a world of one; a launched one reads torchrun's variables."""

from kit import ranks


def test_plain_process_is_a_world_of_one(monkeypatch):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert not ranks.in_worker() and ranks.is_main() and ranks.world_size() == 1
    assert ranks.gather_to_main({"a": 1}) == [{"a": 1}]
    ranks.wait_for_everyone()  # no process group, nothing to wait for


def test_launched_rank_reads_torchrun_variables(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert ranks.in_worker() and not ranks.is_main()
    assert (ranks.world_size(), ranks.rank(), ranks.local_rank()) == (4, 2, 0)


def test_first_recorded_failure_wins(monkeypatch, tmp_path):
    monkeypatch.setenv(ranks.FAILURES_ENV, str(tmp_path))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    ranks.record_failure(RuntimeError("reward broke\nsecond line"))
    monkeypatch.setenv("RANK", "0")
    ranks.record_failure(ConnectionError("peer closed"))  # the consequence, recorded later
    assert ranks.first_failure(tmp_path) == "rank 1: RuntimeError: reward broke"


def test_no_failure_recorded_outside_a_launch(monkeypatch, tmp_path):
    monkeypatch.delenv(ranks.FAILURES_ENV, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    ranks.record_failure(RuntimeError("x"))
    assert ranks.first_failure(tmp_path) is None
