"""The held-out checks while GRPO trains (kit.train.evaluation.HeldOutCurve), with the scoring replaced by a
recorder: when they run, what they log, and that they leave training's random draws as they were."""

import json
from types import SimpleNamespace

import pytest
import torch
from datasets import Dataset
from transformers import TrainerControl, TrainerState

from kit.config import build_config
from kit.eval.evaluate import EvalResult
from kit.train import evaluation
from kit.train.evaluation import HeldOutCurve, check_every


@pytest.fixture
def scored(monkeypatch):
    """The steps scored; each scoring reseeds torch, as kit.models.generate does."""
    steps = []

    def fake_evaluate(cfg, recipe, model, tokenizer, rows, name):
        torch.manual_seed(cfg.seed)
        steps.append((name, len(rows)))
        return EvalResult(name=name, n=len(rows), strict_accuracy=0.25, lenient_accuracy=0.5, format_compliance=1.0,
                          rewards={}, mean_length=3.0)

    monkeypatch.setattr(evaluation, "evaluate_held_out", fake_evaluate)
    return steps


def curve(tmp_path, every=2, during_n=3):
    cfg = build_config([{"eval": {"during_n": during_n}}])
    held_out = SimpleNamespace(cfg=cfg, recipe=None, model=None, tokenizer=None,
                               rows=Dataset.from_list([{"prompt": str(i)} for i in range(10)]))
    return HeldOutCurve(held_out, "grpo", every, tmp_path / "metrics.jsonl")


def step(callback, number, max_steps=10, stop=False):
    state, control = TrainerState(global_step=number, max_steps=max_steps), TrainerControl(should_training_stop=stop)
    callback.on_step_begin(None, state, control)
    callback.on_step_end(None, state, control)


def test_every_nth_step_scores_the_first_rows_and_logs_them(tmp_path, scored):
    callback = curve(tmp_path)
    for number in range(1, 5):
        step(callback, number)
    assert scored == [("step 2", 3), ("step 4", 3)]
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["eval/strict"], r["eval/n"]) for r in records] == [(2, 0.25, 3), (4, 0.25, 3)]


def test_a_stop_request_skips_the_check_but_the_planned_end_does_not(tmp_path, scored):
    callback = curve(tmp_path)
    step(callback, 2, stop=True)  # Ctrl-C: the checkpoint comes first
    step(callback, 10, max_steps=10, stop=True)  # the trainer's own end of the plan
    assert scored == [("step 10", 3)]


def test_the_check_leaves_trainings_random_draws_as_they_were(tmp_path, scored):
    callback = curve(tmp_path)
    torch.manual_seed(123)
    step(callback, 1)
    expected = torch.rand(3)
    torch.manual_seed(123)
    step(callback, 2)  # scored: the fake reseeds torch inside
    assert scored and torch.equal(torch.rand(3), expected)


def test_on_a_cpu_the_checks_are_off_unless_asked_for_and_never_under_a_sharded_launcher(monkeypatch):
    monkeypatch.setattr(evaluation.env, "has_gpu", lambda: False)
    assert check_every(build_config([{}])) == 0
    assert check_every(build_config([{"eval": {"every_steps": 5}}])) == 5
    monkeypatch.setattr(evaluation.env, "has_gpu", lambda: True)
    assert check_every(build_config([{}])) == evaluation.CHECK_EVERY_ON_A_GPU
    sharded = {"launch": {"num_processes": 2, "launcher": "fsdp"}, "model": {"load_in_4bit": False},
               "grpo": {"optim": "adamw_torch"},
               "eval": {"every_steps": 5}}
    assert check_every(build_config([sharded])) == 0
