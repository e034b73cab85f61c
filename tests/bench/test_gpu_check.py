"""bench.gpu_check: its bookkeeping and comparisons, then the whole check at the tiny shape on this CPU."""

import subprocess
import sys
import traceback
from dataclasses import replace

import pytest
import torch

from bench.gpu_check import (
    SHAPES,
    alternation,
    compare_merges,
    fused_head_failure,
    grpo_checks,
    summarize_side,
    with_ratios,
)
from kit.doctor.machine import Machine
from kit.doctor.processes import FAIL, PASS, SKIP
from tests.conftest import REPO

BF16_STEP = torch.finfo(torch.bfloat16).eps


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

    def run(self, worker: str, label: str, spec: dict) -> dict:
        self.done += 1
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
