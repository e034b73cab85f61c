"""The memory probe (kit/plan/probe.py) through a real `trainer.train()` on the tiny model, on the CPU: it builds
the run's largest batch (the longest prompts, each completion run to max_completion_length) and throws its step
away, so two steps trained after it equal two steps trained without it, weight for weight and log for log."""

import json
from types import SimpleNamespace

import pytest
import yaml

from kit.config import GRPOSection
from kit.data.rows import prompt_lengths
from kit.errors import KitError
from kit.plan.probe import MemoryProbe, probe_applies
from kit.plan.probe_verdict import ProbeResult, report
from kit.recipes import load_recipe
from kit.train.prepare import prepare_run
from kit.train.stages.grpo import build_trainer
from tests.conftest import COUNT_RECIPE

pytestmark = pytest.mark.slow  # two short trainings of the tiny model: about half a minute

GRPO = {"max_steps": 2, "per_device_train_batch_size": 8, "num_generations": 2, "max_completion_length": 12,
        "learning_rate": 0.05}  # large, so that two steps move the weights (COUNT_RECIPE's reward varies)


def two_steps(tmp_path, probed: bool):
    tmp_path.mkdir()
    from kit.models import loader

    (tmp_path / "count.py").write_text(COUNT_RECIPE)
    recipe = load_recipe(str(tmp_path / "count.py"))
    cfg = recipe.config({}, {"profile": "smoke", "output_dir": str(tmp_path / "run"), "eval": {"n": 0},
                             "grpo": GRPO, "monitor": {"samples": 0}}, gpu=False)
    run = prepare_run(cfg, recipe)
    run.out.root.mkdir(parents=True)
    run.out.run_file.write_text("seed: 3407\n")  # as kit train writes it before training
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    trainer = build_trainer(cfg, run.stage_args["grpo"], model, tokenizer, run.rows, run.rewards, run.out)
    probe = MemoryProbe(trainer, run.out.run_file, optim=cfg.grpo.optim) if probed else None
    if probe:
        trainer.add_callback(probe)
    trainer.train()
    weights = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    logged = [{k: v for k, v in entry.items() if not k.endswith("time") and "per_second" not in k}
              for entry in trainer.state.log_history]
    return SimpleNamespace(weights=weights, logged=logged, probe=probe, run=run, tokenizer=tokenizer)


def test_the_probe_runs_the_largest_step_and_training_goes_on_as_without_it(tmp_path, capsys):
    plain = two_steps(tmp_path / "plain", probed=False)
    probed = two_steps(tmp_path / "probed", probed=True)

    result = probed.probe.result
    assert result.prompts == GRPO["per_device_train_batch_size"] // GRPO["num_generations"]
    assert result.prompt_tokens == max(prompt_lengths(probed.run.rows, probed.tokenizer))
    assert result.completion_tokens == GRPO["max_completion_length"]  # the shortest ran to the cap too
    assert result.peak_gib > 0 and result.optimizer_gib > 0
    recorded = yaml.safe_load(probed.run.out.run_file.read_text())["memory_probe"]
    assert recorded["prompt_tokens"] == result.prompt_tokens and recorded["device"] == "CPU"
    assert "memory probe: 4 prompts of up to" in capsys.readouterr().out

    assert any(entry.get("grad_norm", 0) > 0 for entry in plain.logged), "nothing trained: the check would be empty"
    assert plain.weights.keys() == probed.weights.keys() and plain.weights
    assert all(plain.weights[name].equal(probed.weights[name]) for name in plain.weights), \
        "the probe changed what training did"
    assert json.dumps(plain.logged, sort_keys=True) == json.dumps(probed.logged, sort_keys=True)


class Plan(SimpleNamespace):
    pass


def test_a_step_the_gpu_cannot_hold_stops_the_run_with_the_plans_advice(tmp_path):
    run_file = tmp_path / "run.yaml"
    run_file.write_text("seed: 1\n")
    big = ProbeResult(prompts=8, prompt_tokens=300, completion_tokens=512, peak_gib=14.2, optimizer_gib=0.1,
                      device="Tesla T4", gpu_gib=14.7)
    plan = Plan(gpu="T4", gpu_gib=14.7, peak_gib=9.4, proposals=["grpo.num_generations=4 (peak 8.1 GiB)"],
                cfg=SimpleNamespace(model=SimpleNamespace(fast_inference=False)))
    with pytest.raises(KitError, match=r"plan 9.4 GiB, probe 14.3 GiB of 14.7 \(8 prompts of up to 300 tokens x "
                                       r"512-token completions\): does not fit Tesla T4 .*grpo.num_generations=4"):
        report(big, plan, run_file)
    recorded = yaml.safe_load(run_file.read_text())["memory_probe"]
    assert recorded["fits"] is False and recorded["estimated_peak_gib"] == 9.4

    report(ProbeResult(8, 300, 512, 10.0, 0.1, "Tesla T4", gpu_gib=14.7), plan, run_file)
    assert yaml.safe_load(run_file.read_text())["memory_probe"]["fits"] is True


def test_the_probe_is_on_with_a_gpu_unless_the_setting_says(monkeypatch):
    from kit import env

    cfg = SimpleNamespace(grpo=GRPOSection())
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    assert probe_applies(cfg)
    monkeypatch.setattr(env, "has_gpu", lambda: False)
    assert not probe_applies(cfg)
    assert probe_applies(SimpleNamespace(grpo=GRPOSection(memory_probe=True)))


def test_a_step_that_runs_out_of_memory_is_one_line_and_the_trainer_is_left_as_it_was(tiny_tokenizer):
    """What the probe is for: the out-of-memory a late step would meet, said before training, with the way out."""
    import torch
    from datasets import Dataset

    def runs_out(rows):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    rewards = [lambda **kwargs: [1.0]]
    model = torch.nn.Linear(2, 2)
    trainer = SimpleNamespace(
        train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "hi " * n}]} for n in (1, 9, 3)]),
        processing_class=tiny_tokenizer, num_generations=2, max_completion_length=64, mask_truncated_completions=True,
        args=SimpleNamespace(generation_batch_size=4), accelerator=SimpleNamespace(num_processes=1),
        _metrics={"train": {}}, _logs={"prompt": []}, state=SimpleNamespace(num_input_tokens_seen=7),
        _buffered_inputs=None, model=model, reward_funcs=rewards, generation_kwargs={"max_new_tokens": 64},
        _generate_and_score_completions=runs_out)
    plan = Plan(gpu_gib=14.7, peak_gib=9.4, proposals=["grpo.max_completion_length=256 (peak 7.0 GiB)"])
    probe = MemoryProbe(trainer, run_file=None, plan=plan)
    with pytest.raises(KitError, match=r"^memory probe: one step at the run's largest shapes ran out of memory on the "
                                       r"CPU \(CUDA out of memory. Tried to allocate 2.00 GiB\). Nothing was trained. "
                                       r"grpo.max_completion_length=256"):
        probe.on_train_begin(None, None, None)
    assert trainer.reward_funcs is rewards and trainer.mask_truncated_completions
    assert trainer.generation_kwargs == {"max_new_tokens": 64} and trainer.state.num_input_tokens_seen == 7
