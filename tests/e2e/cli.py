"""How the end-to-end tests run the kit: its command line in a subprocess, as a user would, and plain
transformers on what it saved (no kit code in that process)."""

import json
import os
import subprocess
import sys
import textwrap

import yaml

from kit.config import build_config, read_yaml
from kit.monitor.metrics import read_metrics
from kit.outputs import RunDir
from tests.conftest import REPO

# A guard against a hung process, not a speed test: a slow or busy machine must not fail a test that works.
HANG_GUARD_S = 3600

GENERATE_WITH_PLAIN_TRANSFORMERS = textwrap.dedent(
    """
    import json, sys
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    path = sys.argv[1]
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is 2 plus 3?"}],
                                           add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**prompt, max_new_tokens=8, do_sample=False)
    print(json.dumps({"new_tokens": out.shape[1] - prompt["input_ids"].shape[1], "dtype": str(model.dtype),
                      "quantized": hasattr(model.config, "quantization_config"),
                      "unsloth_loaded": "unsloth" in sys.modules}))
    """
)


def kit(*args, env_extra=None, timeout=HANG_GUARD_S, stdin=None) -> subprocess.CompletedProcess:
    """`python -m kit ARGS` from the repository root; output captured as text."""
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "kit", *map(str, args)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=stdin, check=False)


def kit_train(*args, env_extra=None, timeout=HANG_GUARD_S) -> subprocess.CompletedProcess:
    return kit("train", *args, env_extra=env_extra, timeout=timeout)


def make(target, *variables, timeout=HANG_GUARD_S) -> subprocess.CompletedProcess:
    """`make TARGET VAR=value ...`, as the README says to run it."""
    return subprocess.run(["make", "--no-print-directory", target, *variables], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, check=False)


def plain_generate(path):
    result = subprocess.run([sys.executable, "-c", GENERATE_WITH_PLAIN_TRANSFORMERS, str(path)],
                            capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_run_layout(out, steps, reward="answer_correct"):
    run = RunDir(out)
    for path in (run.run_file, run.metrics, run.adapter / "adapter_config.json", run.merged / "config.json",
                 run.merged / "model.safetensors"):
        assert path.exists(), f"{path.relative_to(out)} missing from {sorted(p.name for p in out.iterdir())}"
    assert not [p for p in out.iterdir() if ".partial" in p.name], "a temporary folder was left behind"
    logged = [m for m in read_metrics(run.metrics) if "reward" in m]
    assert [m["step"] for m in logged] == list(range(1, steps + 1))
    assert all(f"rewards/{reward}/mean" in m and "reward_std" in m for m in logged)
    cfg = build_config([read_yaml(run.run_file)])  # run.yaml is a valid config as it stands
    record = yaml.safe_load(run.run_file.read_text())
    assert record["versions"]["trl"] == "1.15.0"
    if "grpo" in cfg.stages:  # the values the trainer held, read back from it: every one resolved by the kit
        from kit.train.stages.grpo import trainer_settings  # imports Unsloth

        held, passed = record["trainer"]["grpo"], trainer_settings(cfg.grpo)
        # transformers normalizes some values itself (report_to "none" -> [], adamw_torch -> adamw_torch_fused);
        # these are the ones the kit sets and a patch could change
        keys = ("loss_type", "scale_rewards", "epsilon", "epsilon_high", "mask_truncated_completions", "beta",
                "num_generations", "per_device_train_batch_size", "max_completion_length", "learning_rate",
                "temperature", "max_steps")
        assert {k: held[k] for k in keys} == {k: passed[k] for k in keys}, f"the trainer held other values: {held}"
    return cfg
