"""`kit doctor`: whether this machine can run the kit's default GPU route, found out in minutes.

    python -m kit doctor [--out FILE] [--steps N]      # make doctor

It prints the GPU, its compute capability, the driver, bf16, the installed versions against the kit's
pins, then starts vLLM's engine with 4-bit weights and a LoRA adapter and runs the default route (a few
GRPO steps, then the evaluation through the live adapter) on a tiny random model, with the peak memory
beside `kit plan`'s figure. One line a check, a one-line verdict, and a JSON to paste into a bug report.
On a machine without a GPU it says which checks it could not make and why, and exits 0.
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from kit.doctor import processes, route
from kit.doctor.machine import Machine, outside_pins, pins, probe_machine
from kit.doctor.processes import FAIL, PASS, SKIP, Check, Driver, announce, exit_code, exit_on_sigterm, skipped
from kit.env import MIN_NVIDIA_DRIVER
from kit.plan.gpus import STACK_MIN_CAPABILITY, gpu_problem

ROUTE_STEPS, ROUTE_COMPLETION_TOKENS = 3, 32  # enough for a warm-up step and two timed ones
WORKER_TIMEOUT_S = 420  # per check: vLLM's engine starts in about a minute on a current GPU
CHECKS = ("gpu", "driver", "versions", "build model", "vllm 4-bit + lora", "grpo default route")


def run_doctor(out: Path | None, steps: int = ROUTE_STEPS) -> int:
    started, out = time.perf_counter(), out or Path("outputs") / f"doctor-{time.strftime('%Y%m%d-%H%M%S')}.json"
    exit_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="kit-doctor-") as tmp:  # the model, the adapter, the logs: all go
        driver = Driver(Path(tmp), WORKER_TIMEOUT_S, total=3)
        machine = probe_machine(driver)
        print(machine_line(machine), flush=True)
        checks = [announce(c) for c in (gpu_check(machine), driver_check(machine), versions_check(machine))]
        checks += route_checks(driver, machine, Path(tmp), steps)
    verdict = verdict_line(machine, checks)
    print(verdict)
    record = {"schema": 1, "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds": time.perf_counter() - started,
              "machine": {**asdict(machine), "platform": platform.platform(), "python": platform.python_version()},
              "checks": [asdict(c) for c in checks], "verdict": verdict, "ok": exit_code(checks) == 0}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"report: {out} (paste it into a bug report)")
    return exit_code(checks)


def machine_line(m: Machine) -> str:
    torch = f"torch {m.versions.get('torch')}" + (f" (CUDA {m.torch_cuda})" if m.torch_cuda else " (CPU build)")
    driver = f"NVIDIA driver {m.nvidia_driver}" if m.nvidia_driver else "no NVIDIA driver"
    if not m.cuda:
        return f"doctor: no CUDA device; {driver}; {torch}"
    bf16 = "bf16 native" if m.bf16 else "bf16 emulated only: training uses float16"
    return (f"doctor: {m.gpu} ({m.gpu_memory_gib:.1f} GiB), compute capability {m.capability}, {driver}, {bf16}; "
            f"{torch}")


def gpu_check(m: Machine) -> Check:
    if not m.cuda:
        return skipped("gpu", m.driver_problem or "no CUDA device: the GPU checks below are skipped")
    problem = gpu_problem(m.gpu, m.capability)
    if problem:
        return Check("gpu", FAIL, reason=problem)
    return Check("gpu", PASS, f"{m.gpu}, compute capability {m.capability} (the stack needs {STACK_MIN_CAPABILITY}+)")


def driver_check(m: Machine) -> Check:
    if m.nvidia_driver is None:
        return skipped("driver", "no NVIDIA driver (nvidia-smi) here")
    if m.driver_problem:
        return Check("driver", FAIL, reason=m.driver_problem)
    return Check("driver", PASS, f"{m.nvidia_driver} (the CUDA 13 builds need {MIN_NVIDIA_DRIVER}+)")


def versions_check(m: Machine) -> Check:
    wanted = pins()
    if not wanted:
        return skipped("versions", "the kit is not installed as a package (pip install -e .), so its pins are unknown")
    outside = outside_pins(m.versions, wanted)
    installed = {k: v for k, v in m.versions.items() if v}
    absent = [k for k, v in m.versions.items() if not v]
    figures = {"installed": installed, "not_installed": absent, "outside_pins": outside}
    if outside:
        return Check("versions", FAIL, reason=f"outside the kit's pins: {', '.join(outside)}; reinstall with "
                                              "make install (or pip install -e '.[gpu,gguf]')", figures=figures)
    summary = f"{len(installed)} packages inside the kit's pins" + (f"; not installed: {', '.join(absent)}"
                                                                     if absent else "")
    return Check("versions", PASS, summary, figures=figures)


def route_checks(driver: Driver, m: Machine, work: Path, steps: int) -> list[Check]:
    """Build the tiny model, start vLLM's engine on it, then run the default route: each a process of its own."""
    gaps = route.route_gaps(m)
    if gaps:
        return [announce(skipped(name, "; ".join(gaps))) for name in CHECKS[3:]]
    model_dir = work / "model"
    build = announce(to_check("build model", driver.run("build", "building a tiny random Qwen2",
                                                        {"model_dir": str(model_dir)})))
    if build.status != PASS:
        return [build] + [announce(skipped(name, "needs the model, which could not be built")) for name in CHECKS[4:]]
    config = route.route_config(model_dir, steps, ROUTE_COMPLETION_TOKENS)
    engine = announce(to_check("vllm 4-bit + lora", driver.run("vllm-engine", "vLLM's engine: 4-bit weights and "
                                                               "a LoRA request", {"kit_config": config})))
    trained = announce(to_check("grpo default route", driver.run(
        "default-route", f"the default route: {steps} GRPO steps, then the evaluation through the live adapter",
        {"kit_config": config, "out_dir": str(work / "run")})))
    return [build, engine, trained]


def to_check(name: str, result: dict) -> Check:
    return processes.to_check(name, result, SUMMARIES)


def build_summary(f: dict) -> str:
    return f"{f['parameters'] / 1e6:.1f}M parameters ({f['model_type']}, {f['layers']} layers x {f['hidden']})"


def engine_summary(f: dict) -> str:
    return (f"engine up in {f['load_seconds']:.0f} s with {f['quantization'] or 'unreported'} weights; plain and "
            f"LoRA requests generated {f['prompts']} x {f['new_tokens']} tokens in {f['generate_seconds']:.1f} s; "
            f"{f['device_used_gib']:.1f} GiB in use on the device")


SUMMARIES = {"build model": build_summary, "vllm 4-bit + lora": engine_summary,
             "grpo default route": route.route_summary}


def verdict_line(m: Machine, checks: list[Check]) -> str:
    failures = [c for c in checks if c.status == FAIL]
    if failures:
        first = failures[0]
        verdict = f"verdict: the default route will not run here: {first.name}: {first.reason}"
        if first.name.startswith(("vllm", "grpo")):  # the GPU itself is fine: training without vLLM may be
            verdict += ". With model.fast_inference=false the kit trains without vLLM (slower generation)"
        return verdict
    if not m.cuda:
        return ("verdict: no GPU here, so the default route (4-bit weights, vLLM, LoRA) was not checked; CPU runs "
                "work: make demo, make demo-real, make train PROFILE=smoke")
    skipped_names = [c.name for c in checks if c.status == SKIP]
    if skipped_names:
        return f"verdict: nothing failed, but {', '.join(skipped_names)} could not be checked (see above)"
    return "verdict: this machine runs the kit's default route: make train RECIPE=gsm8k"

