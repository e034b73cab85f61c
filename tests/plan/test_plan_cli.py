from types import SimpleNamespace

import yaml

from kit.cli import main
from kit.config import read_yaml
from kit.plan.record import MemoryRecorder
from tests.plan.conftest import MODEL_CONFIGS

QWEN, LLAMA = str(MODEL_CONFIGS / "Qwen2.5-1.5B-Instruct"), str(MODEL_CONFIGS / "Llama-3.1-8B-Instruct")


def test_plan_prints_breakdown_and_verdict(capsys):
    assert main(["plan", "gsm8k", "--model", QWEN, "--gpu", "T4", "--config", "configs/gsm8k_16gb.yaml"]) == 0
    out = capsys.readouterr().out
    assert "on T4 (14.7 GiB)" in out and "verdict: fits" in out and "LoRA + optimizer" in out
    assert "other GPUs:" in out


def test_several_processes_are_planned_as_plain_trl(capsys):
    common = ["plan", "gsm8k", "--model", QWEN, "--gpu", "A100-80GB", "model.load_in_4bit=false"]
    main(common)
    one = capsys.readouterr().out
    main([*common, "launch.num_processes=2"])
    two = capsys.readouterr().out
    main([*common, "--stack", "trl"])
    trl = capsys.readouterr().out
    assert "  one GPU of 2 processes (on this machine): each optimizer step holds" in two
    assert "one GPU of" not in trl + one
    two = "\n".join(line for line in two.splitlines() if not line.startswith("  one GPU of"))
    assert two.split("\nother GPUs")[0] == trl.split("\nother GPUs")[0] != one.split("\nother GPUs")[0]


def test_a_run_across_machines_is_planned_per_gpu_with_every_processs_completions(capsys):
    main(["plan", "gsm8k", "--model", QWEN, "--gpu", "A100-80GB", "model.load_in_4bit=false",
          "launch.num_processes=4", "launch.num_machines=2", "grpo.per_device_train_batch_size=8",
          "grpo.num_generations=8", "grpo.gradient_accumulation_steps=2"])
    assert ("one GPU of 8 processes (2 machines x 4): each optimizer step holds 128 completions across them "
            "(16 prompts x 8 generations)") in capsys.readouterr().out


def test_plan_exits_1_when_it_does_not_fit(capsys):
    assert main(["plan", "gsm8k", "--model", LLAMA, "--gpu", "T4", "model.load_in_4bit=false"]) == 1
    assert "verdict: does not fit" in capsys.readouterr().out


def test_train_refuses_a_clear_misfit_before_writing_anything(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["train", "gsm8k", "--gpu", "T4", "--model", LLAMA, "--profile", "full", "--out", str(out),
                 "model.load_in_4bit=false"])
    err = capsys.readouterr().err
    assert code == 2 and "will not fit the GPU" in err and "--skip-plan" in err and "weights" in err
    assert not out.exists()


def test_skip_plan_lets_the_run_go_ahead(tmp_path, monkeypatch):
    started = []
    def run_training(cfg, recipe, resume, plan):
        started.append(plan)
        return SimpleNamespace(failed=[])  # every saved format passed its checks

    monkeypatch.setattr("kit.train.run.run_training", run_training)
    assert 0 == main(["train", "gsm8k", "--gpu", "T4", "--model", LLAMA, "--profile", "full",
                      "--out", str(tmp_path / "run"), "--skip-plan", "model.load_in_4bit=false"])
    assert started and started[0].refused


def test_memory_recorder_writes_estimate_and_measurement_once(tmp_path):
    from kit.config import build_config
    from kit.plan.planner import make_plan
    from kit.plan.shapes import read_shape

    cfg = build_config([{"model": {"name": QWEN}}])
    plan = make_plan(cfg, read_shape(QWEN), "T4", 14.7)
    run_file = tmp_path / "run.yaml"
    run_file.write_text(yaml.safe_dump({"recipe": "gsm8k"}) + "# versions\n" + yaml.safe_dump({"versions": {"x": 1}}))
    peaks = iter([{"measured_max_allocated_gib": 5.0}, {"measured_max_allocated_gib": 9.0}])
    recorder = MemoryRecorder(run_file, plan, read_peaks=lambda: next(peaks))
    for step in (1, 2, 3):
        recorder.on_step_end(None, SimpleNamespace(global_step=step), None)
    memory = yaml.safe_load(run_file.read_text())["memory"]
    assert memory["measured_max_allocated_gib"] == 5.0 and memory["after_step"] == 2
    assert memory["estimated_peak_gib"] == round(plan.peak_gib, 2) and memory["gpu"] == "T4"
    assert read_yaml(run_file) == {"recipe": "gsm8k"}, "memory and versions are records, not settings"
