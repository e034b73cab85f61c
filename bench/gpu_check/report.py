"""What gpu_check prints and keeps: one line per check with its figures in words, and the JSON record
(BENCHMARKS.md, "GPU route check", describes it)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from bench.gpu_check.settings import MERGED_DTYPE, REPO, Settings
from kit.doctor import processes, route
from kit.doctor.machine import Machine
from kit.doctor.processes import Check, exit_code


def memory_words(f: dict) -> str:
    if "peak_allocated_gib" in f:
        return f"{f['peak_allocated_gib']:.2f} GiB allocated"
    return f"no CUDA: GPU memory not measured (peak RSS {f['peak_rss_gib']:.2f} GiB)"


def build_summary(f: dict) -> str:
    return (f"{f['seconds']:.1f} s, {f['parameters'] / 1e6:.1f}M parameters ({f['model_type']}, {f['layers']} layers "
            f"x {f['hidden']}, vocab {f['vocab']}; tokenizer {f['tokenizer_pieces']} pieces), "
            + ("real weights" if f.get("real_weights") else "random weights"))


def load_summary(f: dict) -> str:
    kind = f"{f['linear_4bit_modules']} Linear4bit modules" if f["linear_4bit_modules"] else f"{f['dtype']} weights"
    return (f"{f['seconds']:.1f} s, {kind}, {f['trainable'] / 1e6:.2f}M of {f['parameters'] / 1e6:.1f}M parameters "
            f"trainable (LoRA), forward finite, {memory_words(f)}")


def grpo_summary(side: str, s: dict, settings: Settings, plans: dict) -> str:
    speed = f"{s['seconds_per_step']:.3g} s/step"
    rounds = len(s["seconds_per_step_by_round"])
    if side == "kit":
        steady = "step 2" if settings.steps == 2 else f"steps 2-{settings.steps}"
        speed += f" (median of {rounds} run(s), {steady} of each)" if settings.steps > 1 else ""
    else:
        speed += f" = {s['time_vs_kit']:.2f}x the kit's" if "time_vs_kit" in s else " (no kit figure to compare)"
    plan = plans.get("trl" if side == "trl" else "unsloth")
    planned = f"kit plan{' --stack trl' if side == 'trl' else ''}: {plan['peak_gib']:.2f} GiB" if plan else ""
    if "peak_allocated_gib" not in s:
        return f"{speed}; no CUDA: GPU peak not measured ({planned} on a GPU)" if planned else speed
    peak = f"peak {s['peak_allocated_gib']:.2f} GiB"
    if "peak_vs_kit" in s:
        peak += f" = {s['peak_vs_kit']:.2f}x the kit's"
    if plan and side != "unsloth":
        peak += f" ({planned}, measured/plan {s['peak_allocated_gib'] / plan['peak_gib']:.2f})"
    return f"{speed}, {peak}"


def merge_summary(f: dict) -> str:
    return (f"max |kit - PEFT| {f['max_abs_diff']:.2e} over {f['tensors']} tensors ({f['worst_relative_diff']:.1e} "
            f"of a tensor's scale; tolerance {f['tolerance']:.1e}, one {MERGED_DTYPE} step); the adapter moved "
            f"{f['changed_tensors']} weights by up to {f['adapter_max_delta']:.1e}; kit {f['kit_seconds']:.2f} s, "
            f"PEFT {f['peft_seconds']:.2f} s")


def generate_summary(f: dict) -> str:
    return (f"{f['differing_prompts']} of {f['prompts']} seeded samples ({f['new_tokens']} tokens) differ with the "
            f"adapter on vs disable_adapter(), base repeatable; logits moved by up to {f['max_logit_diff']:.2e}")


def vllm_summary(f: dict) -> str:
    return (f"{f['differing_prompts']} of {f['prompts']} seeded samples differ with the LoRA request vs without, base "
            f"repeatable; engine load {f['load_seconds']:.0f} s, {f['tokens_per_second']:.0f} tokens/s, "
            f"{memory_words(f)}")


SUMMARIES = {"build model": build_summary, "load 16-bit": load_summary, "load 4-bit": load_summary,
             "default route": route.route_summary,
             "merge vs peft": merge_summary, "adapter hf generate": generate_summary, "vllm adapter": vllm_summary}


def to_check(name: str, result: dict) -> Check:
    return processes.to_check(name, result, SUMMARIES)


def default_out() -> Path:
    return Path("outputs") / f"gpu-check-{time.strftime('%Y%m%d-%H%M%S')}.json"


def write_report(out: Path, record: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")


def commit() -> str | None:
    """The checkout's commit, with "+changes" when files differ from it: which code made the figures."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    if not shutil.which("git"):
        return None
    head = git("rev-parse", "--short", "HEAD")
    return f"{head}{'+changes' if git('status', '--porcelain', '--untracked-files=no') else ''}" if head else None


def headline(machine: Machine, shape: str, s: Settings, out: Path) -> str:
    where = f"{machine.gpu} ({machine.gpu_memory_gib:.1f} GiB)" if machine.cuda else f"no CUDA, {os.cpu_count()} CPUs"
    return (f"gpu_check: {where}, shape {shape}, {s.steps} GRPO steps x {s.rounds} rounds of each side, "
            f"{s.generations} completions of <= {s.completion_tokens} tokens per step; report -> {out}")


def report(argv: list[str], seconds: float, shape: str, s: Settings, machine: Machine, plans: dict,
           checks: list[Check]) -> dict:
    """The JSON record (BENCHMARKS.md, "GPU route check", describes it)."""
    return {"schema": 1, "command": " ".join(["python -m bench.gpu_check", *argv]), "commit": commit(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds": seconds, "shape": shape,
            "settings": asdict(s), "machine": {**asdict(machine), "cpu_count": os.cpu_count(),
                                               "platform": platform.platform(), "python": platform.python_version()},
            "plans": plans, "checks": [asdict(c) for c in checks], "ok": exit_code(checks) == 0}
