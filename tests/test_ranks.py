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
