"""kit doctor: the checks it makes from what the machine is, its verdict, and the command on this CPU."""

import json
import subprocess
import sys

import pytest

from kit.doctor import doctor, route
from kit.doctor.machine import Machine
from kit.doctor.processes import FAIL, PASS, SKIP, Check
from tests.conftest import REPO

EVERYTHING = {name: "1" for name in ("unsloth", "trl", "peft", "bitsandbytes", "vllm", "vllm-bnb-plugin", "torch")}


def gpu_machine(name="Tesla T4", capability=7.5, driver="580.82.07", problem=None, **versions) -> Machine:
    return Machine(cuda=True, gpu=name, gpu_memory_gib=14.6, bf16=capability >= 8, versions={**EVERYTHING, **versions},
                   nvidia_driver=driver, driver_problem=problem, capability=capability, torch_cuda="13.0")


def test_a_gpu_below_the_stacks_kernels_fails_the_gpu_check_and_skips_the_route():
    p100 = gpu_machine("Tesla P100-PCIE-16GB", 6.0)
    check = doctor.gpu_check(p100)
    assert check.status == FAIL and "compute capability 6.0" in check.reason and "GPU T4 x2" in check.reason
    assert route.route_gaps(p100) == ["the GPU is too old for the stack (compute capability 6.0)"]
    assert doctor.gpu_check(gpu_machine()).status == PASS and not route.route_gaps(gpu_machine())


def test_an_old_driver_fails_with_the_driver_found_and_needed():
    old = gpu_machine(driver="535.104.05", problem="the NVIDIA driver here is 535.104.05, but ... needs driver 580")
    assert doctor.driver_check(old).status == FAIL and "535.104.05" in doctor.driver_check(old).reason
    assert doctor.driver_check(gpu_machine()).summary.startswith("580.82.07")


class FakeDriver:
    def __init__(self, results: dict):
        self.results, self.started, self.done = results, [], 0

    def run(self, worker: str, label: str, spec: dict) -> dict:
        self.started.append((worker, spec))
        return self.results[worker]


def test_on_a_gpu_the_route_is_built_started_and_trained_in_that_order(tmp_path):
    results = {"build": {"status": PASS, "figures": {"parameters": 1e6, "model_type": "qwen2", "layers": 2,
                                                      "hidden": 256}},
               "vllm-engine": {"status": FAIL, "reason": "ValueError: no attention backend", "figures": {}},
               "default-route": {"status": FAIL, "reason": "vLLM's engine failed to start", "figures": {}}}
    driver = FakeDriver(results)
    checks = doctor.route_checks(driver, gpu_machine(), tmp_path, steps=2)
    assert [w for w, _ in driver.started] == ["build", "vllm-engine", "default-route"]
    config = driver.started[1][1]["kit_config"]
    assert config["model"]["name"] == str(tmp_path / "model") and config["grpo"]["max_steps"] == 2
    verdict = doctor.verdict_line(gpu_machine(), checks)
    assert verdict.startswith("verdict: the default route will not run here: vllm 4-bit + lora: ValueError")
    assert "model.fast_inference=false" in verdict


def test_without_vllm_every_route_check_is_skipped_with_the_reason(tmp_path):
    checks = doctor.route_checks(FakeDriver({}), gpu_machine(vllm=None), tmp_path, steps=2)
    assert [c.status for c in checks] == [SKIP] * 3 and all("vLLM not installed" in c.reason for c in checks)


def test_the_route_keeps_the_gsm8k_full_profiles_model_settings(tmp_path):
    from kit.config import build_config

    cfg = build_config([route.route_config(tmp_path / "model", steps=3, completion_tokens=32)])
    m = cfg.model
    assert (m.load_in_4bit, m.fast_inference, m.gpu_memory_utilization, m.lora_rank) == (True, True, 0.6, 16)
    assert m.name == str(tmp_path / "model") and cfg.grpo.optim == "adamw_8bit" and cfg.grpo.num_generations == 8
    assert cfg.grpo.max_steps == 3 and cfg.grpo.max_completion_length == 32 and cfg.eval.n == 0


def test_a_cpu_run_passes_with_nothing_failed_and_says_what_it_could_not_check():
    cpu = Machine(cuda=False, gpu=None, gpu_memory_gib=None, bf16=False, versions={**EVERYTHING, "vllm": None})
    checks = [doctor.gpu_check(cpu), doctor.driver_check(cpu), Check("versions", PASS)]
    assert [c.status for c in checks[:2]] == [SKIP, SKIP]
    assert doctor.verdict_line(cpu, checks).startswith("verdict: no GPU here, so the default route")


def test_kit_doctor_on_this_cpu_exits_0_with_every_gpu_check_skipped(tmp_path):
    out = tmp_path / "doctor.json"
    result = subprocess.run([sys.executable, "-m", "kit", "doctor", "--out", str(out)], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(out.read_text())
    by_name = {c["name"]: c for c in record["checks"]}
    assert list(by_name) == list(doctor.CHECKS)
    for name in ("gpu", "build model", "vllm 4-bit + lora", "grpo default route"):
        assert by_name[name]["status"] == SKIP and "no CUDA device" in by_name[name]["reason"], by_name[name]
    assert by_name["versions"]["status"] == PASS, by_name["versions"]
    assert record["verdict"] in result.stdout and record["ok"] is True
    assert f"report: {out}" in result.stdout


@pytest.mark.slow
def test_the_route_workers_run_on_this_cpu_and_report_that_vllm_was_not_used(tmp_path):
    """The default route's own code on the CPU route (16-bit, no vLLM): the plumbing runs end to end (load, GRPO
    steps, the trainer's settings read back, the evaluation's samples), and the check fails, naming what a
    GPU run has that this one had not. On a GPU the same workers run with vLLM and 4-bit weights."""
    from kit.doctor.processes import Driver

    pytest.importorskip("unsloth")
    driver = Driver(tmp_path, timeout_s=600, total=3)
    model_dir = tmp_path / "model"
    assert driver.run("build", "build", {"model_dir": str(model_dir)})["status"] == PASS
    config = route.route_config(model_dir, steps=2, completion_tokens=16)
    config["model"] |= {"load_in_4bit": False, "fast_inference": False}  # what this CPU can do
    config["grpo"]["optim"] = "adamw_torch"
    engine = driver.run("vllm-engine", "engine", {"kit_config": config})
    assert engine["status"] == FAIL and "no vLLM engine" in engine["reason"], engine
    trained = driver.run("default-route", "route", {"kit_config": config, "out_dir": str(tmp_path / "run")})
    assert trained["status"] == FAIL, trained
    assert "no vLLM engine" in trained["reason"] and "did not use vLLM" in trained["reason"], trained["reason"]
    f = trained["figures"]
    assert len(f["step_seconds"]) == 2 and f["trainer_settings"]["epsilon_high"] == 0.2
    assert f["evaluation"]["base_repeatable"] and f["evaluation"]["differing_prompts"] > 0, f["evaluation"]
