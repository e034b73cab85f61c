"""distributed.json's counters, driven the way the trainer drives them."""

import inspect
import json
from types import SimpleNamespace

import torch

from kit.monitor.distributed import CountedReward, RankReport, trainable_norm


def length(completions, answer, **kwargs):
    return [float(len(c)) for c in completions]


def test_counted_reward_keeps_name_and_columns_and_counts():
    counted = CountedReward(length)
    assert counted.__name__ == "length"
    assert list(inspect.signature(counted).parameters)[:2] == ["completions", "answer"]
    assert counted(completions=["ab", "c"], answer=["1", "2"]) == [2.0, 1.0]
    counted(completions=["x"], answer=["3"])
    assert counted.scored == 3


def test_report_records_steps_completions_and_weight_change(tmp_path, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    model = torch.nn.Linear(2, 2)
    counted = CountedReward(length)
    report = RankReport(tmp_path / "distributed.json", counted, "ddp")
    args = SimpleNamespace(device="cpu")
    report.on_train_begin(args, None, None, model=model)
    for batch in (["a", "b"], ["c", "d", "e"]):
        counted(completions=batch, answer=["0"] * len(batch))
        report.on_step_end(args, None, None)
    with torch.no_grad():
        model.weight.add_(1.0)
    report.on_train_end(args, SimpleNamespace(global_step=2), None, model=model)
    written = json.loads((tmp_path / "distributed.json").read_text())
    (rank,) = written["ranks"]
    assert rank["optimizer_steps"] == 2 and rank["completions_per_step"] == [2, 3] and rank["last_step"] == 2
    assert rank["trainable_norm_end"] != rank["trainable_norm_start"]
    assert written["num_processes"] == 1 and written["launcher"] == "ddp"


def test_norm_counts_only_trainable_weights():
    model = torch.nn.Linear(3, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[3.0, 4.0, 0.0]]))
    assert trainable_norm(model) == 5.0
    model.weight.requires_grad_(False)
    assert trainable_norm(model) is None


def test_sharded_launchers_leave_the_norms_out(tmp_path, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    report = RankReport(tmp_path / "distributed.json", CountedReward(length), "zero3")
    args = SimpleNamespace(device="cpu")
    report.on_train_begin(args, None, None, model=torch.nn.Linear(2, 2))
    report.on_train_end(args, SimpleNamespace(global_step=0), None, model=torch.nn.Linear(2, 2))
    (rank,) = json.loads((tmp_path / "distributed.json").read_text())["ranks"]
    assert rank["trainable_norm_start"] is None and rank["trainable_norm_end"] is None
