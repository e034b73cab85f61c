"""The real CLI on the tiny model: train -> adapter + merged model on disk -> plain transformers generates."""

import json
import subprocess
import sys

import pytest
import yaml

from kit.monitor.metrics import read_metrics
from tests.conftest import COUNT_RECIPE, REPO
from tests.e2e.cli import HANG_GUARD_S, check_run_layout, kit, plain_generate

pytestmark = pytest.mark.slow

def test_smoke_train_cli_end_to_end(tmp_path):
    out = tmp_path / "run"
    result = kit("train", "gsm8k", "--profile", "smoke", "--out", str(out), "eval.every_steps=1", "eval.during_n=4")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "SMOKE PROFILE" in result.stdout and "make train RECIPE=gsm8k PROFILE=full" in result.stdout
    cfg = check_run_layout(out, steps=2)

    # the held-out curve while GRPO trains: 4 prompts after each step, logged, drawn and reported
    checks = [m for m in read_metrics(out / "metrics.jsonl") if "eval/strict" in m]
    assert [(c["stage"], c["step"], c["eval/n"]) for c in checks] == [("grpo", 1, 4), ("grpo", 2, 4)]
    assert all(0 <= c["eval/strict"] <= c["eval/lenient"] <= 1 for c in checks)
    assert "eval: held-out check while training: 4 prompts every 1 steps" in result.stdout
    assert "eval (step 2): held-out strict" in result.stdout and "of the run at this pace" in result.stdout
    assert "## Held-out while training (4 prompts, greedy)" in (out / "report.md").read_text()
    assert cfg.profile == "smoke" and cfg.output_dir == str(out)
    timing = yaml.safe_load((out / "run.yaml").read_text())["timing"]  # 2 steps: too few for an estimate
    assert timing["stages"]["grpo"]["actual_seconds"] > 0 and timing["stages"]["grpo"]["estimated_seconds"] is None
    assert timing["whole_run"]["actual_seconds"] > timing["stages"]["grpo"]["actual_seconds"]
    generated = plain_generate(out / "merged")
    assert generated == {"new_tokens": generated["new_tokens"], "dtype": "torch.bfloat16", "quantized": False,
                         "unsloth_loaded": False}
    assert generated["new_tokens"] > 0
    evaluation = json.loads((out / "eval.json").read_text())["results"]
    assert [r["name"] for r in evaluation] == ["before", "after"] and all(r["n"] == 16 for r in evaluation)
    assert "strict accuracy" in result.stdout

    evaluated = kit("eval", "gsm8k", "--adapter", str(out / "adapter"), "--n", "8", "--json", str(tmp_path / "e.json"))
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert "base" in evaluated.stdout and "trained" in evaluated.stdout and "from sample (test)" in evaluated.stdout
    assert [r["name"] for r in json.loads((tmp_path / "e.json").read_text())["results"]] == ["base", "trained"]
    merged = kit("eval", "gsm8k", "--model", str(out / "merged"), "--baseline", "kit:tiny-llama", "--n", "8")
    assert merged.returncode == 0, merged.stderr[-3000:]
    saved = json.loads((out / "eval-merged-test.json").read_text())["results"]
    assert [r["name"] for r in saved] == ["baseline", "model"] and all(r["n"] == 8 for r in saved)
    assert [r["name"] for r in json.loads((out / "eval.json").read_text())["results"]] == ["before", "after"]

    chat = subprocess.run([sys.executable, "-m", "kit", "chat", str(out / "merged"), "--max-new-tokens", "8"],
                          cwd=REPO, input="What is 2 plus 3?\n/reset\n/exit\n", capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert chat.returncode == 0, chat.stderr[-2000:]
    assert "system: Respond in the following format" in chat.stdout and chat.stdout.count("model> ") == 1


def test_4bit_training_merges_into_16bit_weights(tmp_path):
    out = tmp_path / "run4"
    result = kit("train", "gsm8k", "--profile", "smoke", "--out", str(out), "model.load_in_4bit=true")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "4-bit = True" in result.stdout + result.stderr  # Unsloth really loaded it in 4-bit
    assert check_run_layout(out, steps=2).model.load_in_4bit
    generated = plain_generate(out / "merged")
    assert generated["new_tokens"] > 0 and not generated["quantized"] and generated["dtype"] == "torch.bfloat16"


def test_user_recipe_file_trains_and_changes_the_weights(tmp_path, tiny_model):
    from safetensors.torch import load_file

    recipe = tmp_path / "count.py"
    recipe.write_text(COUNT_RECIPE)
    out = tmp_path / "run"
    result = kit("train", str(recipe), "--profile", "smoke", "--out", str(out), "grpo.learning_rate=0.05",
                 "--steps", "3")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    logged = [m for m in read_metrics(out / "metrics.jsonl") if "reward" in m]
    assert len(logged) == 3 and any(m["grad_norm"] > 0 for m in logged)
    base, merged = load_file(tiny_model / "model.safetensors"), load_file(out / "merged" / "model.safetensors")
    changed = [k for k in base if "q_proj" in k and not base[k].float().allclose(merged[k].float())]
    assert changed, "training a reward with signal left the merged q_proj weights equal to the base"
    untouched = "model.embed_tokens.weight"
    assert base[untouched].equal(merged[untouched])


def test_unknown_recipe_exits_with_one_line(tmp_path):
    from kit.recipes import known_recipes

    result = kit("train", "gsm9k", "--out", str(tmp_path / "x"))
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"error: unknown recipe 'gsm9k'; choose from: {', '.join(known_recipes())}")
    assert "gsm8k" in known_recipes()
    assert "Traceback" not in result.stderr


def test_bad_config_fails_before_anything_is_written(tmp_path):
    out = tmp_path / "never"
    result = kit("train", "gsm8k", "--profile", "smoke", "--out", str(out),
                 "grpo.per_device_train_batch_size=1", "grpo.gradient_accumulation_steps=4", "grpo.num_generations=8")
    assert result.returncode == 2
    assert "nearest valid: per_device_train_batch_size=2" in result.stderr
    assert not out.exists()


def test_refuses_to_write_into_a_used_output_folder(tmp_path):
    out = tmp_path / "used"
    out.mkdir()
    (out / "run.yaml").write_text("recipe: gsm8k\n")  # alone, a start that never checkpointed: started again
    (out / "notes.txt").write_text("mine\n")  # something the kit does not write: never cleared
    result = kit("train", "gsm8k", "--profile", "smoke", "--out", str(out))
    assert result.returncode == 2 and "is not empty" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "run.yaml"], "the refused folder is left as it was"


def test_train_with_gguf_export_verifies_it(tmp_path):
    out = tmp_path / "rung"
    result = kit("train", "gsm8k", "--profile", "smoke", "--out", str(out),
                 "save.formats=[lora,merged_16bit,gguf]", "save.quant=[q8_0]")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((out / "gguf" / "verification.json").read_text())
    assert [r["file"] for r in report] == ["rung.Q8_0.gguf"] and report[0]["ok"]
    assert (out / "gguf" / "Modelfile").exists()
    assert "gguf:    " in result.stdout and "(verified in llama.cpp)" in result.stdout


def test_multi_stage_sft_then_grpo(tmp_path):
    out = tmp_path / "stages"
    result = kit("train", "gsm8k", "--profile", "smoke", "--out", str(out), "stages=[sft,grpo]")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    stages = [m["stage"] for m in read_metrics(out / "metrics.jsonl")]
    assert stages.index("grpo") > stages.index("sft") and "sft" not in stages[stages.index("grpo"):]
    names = [r["name"] for r in json.loads((out / "eval.json").read_text())["results"]]
    assert names == ["before", "after sft", "after grpo"]
    assert "after grpo vs after sft" in result.stdout and (out / "plots" / "run.png").exists()

    # time to finish: sft's 4 steps give an estimate after the warm-up and 2 timed steps; grpo's 2 steps none
    assert "time: sft ~" in result.stdout and "grpo (2 steps) not yet measured" in result.stdout
    timing = yaml.safe_load((out / "run.yaml").read_text())["timing"]
    sft, grpo = timing["stages"]["sft"], timing["stages"]["grpo"]
    assert sft["estimated_at_step"] == 3 and sft["estimated_seconds"] > 0 and sft["actual_seconds"] > 0
    assert grpo["estimated_seconds"] is None and grpo["actual_seconds"] > 0
    assert len(timing["held_out_evaluations_seconds"]) == 3
    whole = timing["whole_run"]
    assert whole["estimated_at"] == "sft step 3" and 0 < whole["estimated_seconds"] < whole["actual_seconds"]


def test_sft_stage_needs_a_worked_answer(tmp_path):
    recipe = tmp_path / "count.py"
    recipe.write_text(COUNT_RECIPE)
    out = tmp_path / "never"
    result = kit("train", str(recipe), "--profile", "smoke", "--out", str(out), "stages=[sft,grpo]")
    assert result.returncode == 2 and "defines no sft_target(row)" in result.stderr and not out.exists()
