"""The GPU route end to end, offline: load, GRPO (the kit against hand-written Unsloth and plain TRL), merge, vLLM.

    .venv/bin/python bench/gpu_check.py [--shape tiny|qwen2.5-1.5b|smollm2] [--steps N] [--rounds R] [--out FILE]
    make gpu-check [SHAPE=qwen2.5-1.5b] [STEPS=4] [OUT=results.json]

No network and no model hub: the model is built from a config.json with random weights (speed and memory
depend on shapes, not values) and the kit's tiny tokenizer, which is trained on the spot. The default
shape is Qwen2.5-1.5B (bench/model_configs/) where CUDA is present, the kit's tiny 2-layer Qwen2 elsewhere,
so CI keeps every check that a CPU can run working. `--shape smollm2` uses real weights instead
(SmolLM2-135M-Instruct, reached offline): the kit's overhead on a real model, on a CPU too. One line per
check, in this order:

    build model          the model folder: config, random bf16 weights, tokenizer
    load 16-bit          kit.models.loader.load_model, then one forward pass
    load 4-bit           the same in 4-bit (CUDA and bitsandbytes)
    grpo kit             N GRPO steps through the kit's GRPO stage: s/step, peak memory next to `kit plan`'s estimate
    grpo unsloth script  the same steps in a hand-written FastLanguageModel + GRPOTrainer script, as a ratio
    grpo plain trl       the same steps in plain TRL + PEFT (Unsloth never imported), as a ratio
    merge vs peft        the kit's shard merge of the trained adapter against PEFT's merge_and_unload
    adapter hf generate  seeded transformers sampling with the adapter on and switched off: must differ
    vllm adapter         the same through Unsloth's vLLM engine (fast_inference), with and without a LoRA request
    default route        what `make train RECIPE=gsm8k` runs on one GPU: gsm8k's full-profile model settings (4-bit
                         weights read by vLLM, Unsloth's vLLM engine for the rollouts, LoRA) on this shape for a few
                         steps, then the evaluation through the live adapter (kit.doctor.route; `kit doctor` runs it
                         on the tiny shape)

Each check runs in a fresh process of this file (`--worker`, kit.doctor.processes): Unsloth patches
transformers and TRL at import, so plain TRL needs a process that never imported it, and
torch.cuda.max_memory_allocated is then one check's alone. The three GRPO sides run alternated (kit,
unsloth, trl, kit, ...) with the same model, data, reward and settings, and generate with transformers
(vLLM is checked on its own lines). What this machine cannot do is skipped by name with the reason; a failed
check makes the exit code 1. The figures go to --out as JSON (default outputs/gpu-check-<time>.json):
versions, the GPU, each check's status and figures; BENCHMARKS.md ("GPU route check") describes the format.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script from a checkout: the kit beside it, installed or not

from kit.doctor import processes, route  # noqa: E402  (the standard library only, as every kit.doctor module)
from kit.doctor.machine import Machine, probe_machine  # noqa: E402
from kit.doctor.processes import (  # noqa: E402
    FAIL,
    PASS,
    SKIP,
    Check,
    Driver,
    announce,
    exit_code,
    exit_on_sigterm,
    progress,
    run_worker,
    skipped,
)
from kit.doctor.workers import (  # noqa: E402
    GENERATE_PROMPTS,
    GENERATE_TOKENS,
    SEED,
    adapter_verdict,
    memory_figures,
    prompt_dataset,
    rendered_prompts,
    shared_workers,
    token_parity,
    train_timed,
)
from kit.errors import first_line  # noqa: E402

SIDES = {"kit": "grpo kit", "unsloth": "grpo unsloth script", "trl": "grpo plain trl"}
CHECKS = ("build model", "load 16-bit", "load 4-bit", *SIDES.values(), "merge vs peft", "adapter hf generate",
          "vllm adapter", "default route")
MERGED_DTYPE = "bfloat16"  # what `kit train` writes by default (save.merged_dtype)
PROMPT_TOKENS = 64  # data.max_prompt_length: the digit prompts below are about 20 tokens


@dataclass(frozen=True)
class Settings:
    """One shape's run: every GRPO side uses these, and `kit plan` is asked about the same."""

    steps: int  # GRPO steps per run; the first warms up and is left out of s/step when there are more
    rounds: int  # kit, unsloth, trl, kit, unsloth, trl, ...: each side runs this many times
    generations: int  # one prompt x this many completions per step
    completion_tokens: int
    max_seq_length: int
    lora_rank: int
    learning_rate: float  # high enough that a few steps move the adapter visibly (the generation checks)
    timeout_s: int  # per worker process


SHAPES = {
    # the kit's tiny Qwen2 (kit.models.tiny.SPECS["qwen2"]): 2 layers x 256, its tokenizer's 512-piece vocab
    "tiny": Settings(steps=3, rounds=2, generations=4, completion_tokens=16, max_seq_length=256, lora_rank=8,
                     learning_rate=1e-3, timeout_s=600),
    # bench/model_configs/Qwen2.5-1.5B-Instruct: 28 layers x 1536, vocab 151,936 (tokens past the tiny
    # tokenizer's 512 decode to nothing; the reward reads token ids, so that does not matter)
    "qwen2.5-1.5b": Settings(steps=4, rounds=2, generations=8, completion_tokens=128, max_seq_length=512,
                             lora_rank=16, learning_rate=1e-4, timeout_s=900),
    # a real pretrained model, reached offline (kit/models/smollm2.py): the kit's overhead on real weights, on a CPU too
    "smollm2": Settings(steps=4, rounds=2, generations=8, completion_tokens=16, max_seq_length=256,
                        lora_rank=16, learning_rate=1e-4, timeout_s=900),
}
CONFIG_FILES = {"qwen2.5-1.5b": REPO / "bench" / "model_configs" / "Qwen2.5-1.5B-Instruct" / "config.json"}
REAL_MODELS = {"smollm2": "kit:smollm2"}  # shapes that copy real weights instead of building random ones


# --- workers: each runs in a fresh process and returns {"status", "reason", "figures"} ------------
# (the model's build, the device probe and the default route are kit.doctor's, shared with `kit doctor`)


def build_spec(shape: str, model_dir: Path) -> dict:
    """What kit.doctor.workers.work_build makes for a shape: a file in bench/model_configs, real weights, or
    (neither) the kit's tiny Qwen2."""
    fields = json.loads(CONFIG_FILES[shape].read_text()) if shape in CONFIG_FILES else None
    return {"model_dir": str(model_dir), "fields": fields, "real_model": REAL_MODELS.get(shape)}


def work_load(spec: dict) -> dict:
    """The kit's loader (Unsloth's FastLanguageModel + LoRA), then a forward pass that must be finite."""
    import torch

    from kit.config import ModelConfig
    from kit.models.loader import load_model  # imports Unsloth first

    cfg = ModelConfig(**spec["model"])
    started = time.perf_counter()
    model, tokenizer = load_model(cfg, seed=SEED)
    seconds = time.perf_counter() - started
    batch = tokenizer(rendered_prompts(tokenizer, 2), return_tensors="pt", padding=True).to(model.device)
    with torch.no_grad():
        logits = model(**batch).logits  # [2, prompt tokens, vocab]
    four_bit = sum(1 for m in model.modules() if type(m).__name__ == "Linear4bit")
    figures = {"seconds": seconds, "dtype": str(model.get_input_embeddings().weight.dtype).removeprefix("torch."),
               "parameters": sum(p.numel() for p in model.parameters()),
               "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
               "linear_4bit_modules": four_bit, "logits_finite": bool(torch.isfinite(logits).all()), **memory_figures()}
    problems = [] if figures["logits_finite"] else ["the forward pass gave non-finite logits"]
    if cfg.load_in_4bit and not four_bit:
        problems.append("asked for 4-bit, but no Linear4bit module was found")
    return {"status": FAIL if problems else PASS, "reason": "; ".join(problems) or None, "figures": figures}


def work_grpo_kit(spec: dict) -> dict:
    """GRPO through the kit's own pieces: its config, loader, GRPOConfig and trainer with its callbacks."""
    from kit.config import build_config
    from kit.export.merged import save_adapter
    from kit.models import loader  # imports Unsloth, which must patch TRL first
    from kit.rewards import RewardBundle
    from kit.train.stages.grpo import build_trainer, grpo_args

    cfg = build_config([spec["kit_config"]])
    rewards = RewardBundle((token_parity, 1.0))
    out = Path(spec["out_dir"])
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    trainer = build_trainer(cfg, grpo_args(cfg, out, rewards), model, tokenizer, prompt_dataset(), rewards, out)
    figures = train_timed(trainer)
    if spec.get("adapter_dir"):  # the merge and generation checks start from this run's adapter
        save_adapter(model, tokenizer, Path(spec["adapter_dir"]))
    return {"status": PASS, "figures": figures}


def work_grpo_unsloth(spec: dict) -> dict:
    """What a user writes from Unsloth's GRPO notebooks: FastLanguageModel, get_peft_model, TRL's GRPOTrainer."""
    import unsloth  # noqa: F401  (before TRL and transformers, as Unsloth asks)
    from trl import GRPOConfig, GRPOTrainer
    from unsloth import FastLanguageModel

    m, lora = spec["model"], spec["lora"]
    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=spec["model_dir"], max_seq_length=m["max_seq_length"], load_in_4bit=m["load_in_4bit"],
        fast_inference=False, dtype=None, random_state=SEED)
    model = FastLanguageModel.get_peft_model(
        model, r=lora["r"], lora_alpha=lora["lora_alpha"], lora_dropout=0.0, target_modules=lora["target_modules"],
        use_gradient_checkpointing="unsloth", random_state=SEED)
    args = GRPOConfig(output_dir=spec["out_dir"], seed=SEED, save_strategy="no", **spec["grpo"])
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[token_parity], args=args,
                          train_dataset=prompt_dataset())
    return {"status": PASS, "figures": train_timed(trainer)}


def work_grpo_trl(spec: dict) -> dict:
    """Plain TRL + PEFT (bitsandbytes 4-bit where the kit uses 4-bit), gradient checkpointing on."""
    import torch
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig
    from trl import GRPOConfig, GRPOTrainer

    from kit.env import bf16_supported  # the standard library only: Unsloth stays out of this process

    if "unsloth" in sys.modules:
        raise RuntimeError("Unsloth was imported in the plain-TRL process; its patches would be measured too")
    m, lora, cuda = spec["model"], spec["lora"], torch.cuda.is_available()
    dtype = (torch.bfloat16 if bf16_supported() else torch.float16) if cuda else torch.float32
    options: dict = {"dtype": dtype, "device_map": {"": 0}} if cuda else {"dtype": dtype}
    if m["load_in_4bit"]:
        options["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype)
    model = AutoModelForCausalLM.from_pretrained(spec["model_dir"], **options)
    if m["load_in_4bit"]:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=True,
                                                gradient_checkpointing_kwargs={"use_reentrant": False})
    model = get_peft_model(model, LoraConfig(r=lora["r"], lora_alpha=lora["lora_alpha"], lora_dropout=0.0,
                                             target_modules=lora["target_modules"], task_type="CAUSAL_LM"))
    args = GRPOConfig(output_dir=spec["out_dir"], seed=SEED, save_strategy="no", gradient_checkpointing=True,
                      gradient_checkpointing_kwargs={"use_reentrant": False}, bf16=dtype == torch.bfloat16,
                      fp16=dtype == torch.float16, **spec["grpo"])
    trainer = GRPOTrainer(model=model, processing_class=AutoTokenizer.from_pretrained(spec["model_dir"]),
                          reward_funcs=[token_parity], args=args, train_dataset=prompt_dataset())
    try:
        return {"status": PASS, "figures": train_timed(trainer)}
    except Exception as err:  # classified, then raised again unless it is the known CPU limitation
        if cuda or not fused_head_failure(traceback.extract_tb(err.__traceback__)):
            raise
        return {"status": SKIP, "reason": f"plain TRL needs CUDA: TRL's fused log-prob head failed on CPU "
                                          f"({type(err).__name__}: {first_line(err, 160)})", "figures": {}}


def fused_head_failure(frames) -> bool:
    """Whether a failure came from TRL's fused LM head (its Triton kernels need CUDA or XPU)."""
    return any(frame.name == "_fused_forward" or f"{os.sep}trl{os.sep}kernels" in frame.filename for frame in frames)


def work_merge(spec: dict) -> dict:
    """kit.export.merged.save_merged (shard by shard) against PEFT's merge_and_unload, weight by weight."""
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from kit.export.merged import save_merged

    base_dir, adapter_dir, out = Path(spec["model_dir"]), Path(spec["adapter_dir"]), Path(spec["out_dir"])
    started = time.perf_counter()
    save_merged(adapter_dir, str(base_dir), out, MERGED_DTYPE)
    kit_seconds = time.perf_counter() - started
    ours = {k: v for shard in sorted(out.glob("*.safetensors")) for k, v in load_file(shard).items()}
    started = time.perf_counter()
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)  # fp32: PEFT's merge at full precision
    reference = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload().state_dict()
    peft_seconds = time.perf_counter() - started
    original = {k: v for shard in sorted(base_dir.glob("*.safetensors")) for k, v in load_file(shard).items()}
    figures = compare_merges(ours, reference, original, getattr(torch, MERGED_DTYPE))
    passed, problem = figures.pop("passed"), figures.pop("problem")
    figures.update(kit_seconds=kit_seconds, peft_seconds=peft_seconds)
    return {"status": PASS if passed else FAIL, "reason": problem, "figures": figures}


def compare_merges(ours: dict, reference: dict, original: dict, dtype) -> dict:
    """Our merged weights against PEFT's (rounded to the same dtype), and how far the adapter moved them.

    Passes when every weight is within one rounding step of `dtype` at its tensor's scale, and the adapter
    changed something (two merges of a zero adapter would agree trivially).
    """
    import torch

    tolerance = torch.finfo(dtype).eps
    missing = sorted(set(ours) - set(reference))
    worst, largest, moved, changed = 0.0, 0.0, 0.0, 0
    for key in sorted(set(ours) & set(reference)):
        a, b = ours[key].float(), reference[key].to(dtype).float()
        diff = (a - b).abs().max().item()
        largest = max(largest, diff)
        worst = max(worst, diff / max(b.abs().max().item(), 1e-12))
        if key in original:
            delta = (reference[key].float() - original[key].float()).abs().max().item()  # before rounding
            moved, changed = max(moved, delta), changed + (delta > 0)
    problem = None
    if missing:
        problem = f"PEFT's merged model lacks {len(missing)} of the kit's tensors ({missing[0]}, ...)"
    elif worst > tolerance:
        problem = f"the merges differ by {worst:.2e} of a tensor's scale, above {MERGED_DTYPE}'s {tolerance:.1e}"
    elif moved == 0:
        problem = "the adapter is zero: training did not move it, so the comparison proves nothing"
    return {"tensors": len(set(ours) & set(reference)), "max_abs_diff": largest, "worst_relative_diff": worst,
            "tolerance": tolerance, "adapter_max_delta": moved, "changed_tensors": changed, "missing": missing,
            "passed": problem is None, "problem": problem}


def work_generate_hf(spec: dict) -> dict:
    """Seeded sampling with transformers, the PEFT adapter on and switched off (disable_adapter()): must differ."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cuda = torch.cuda.is_available()
    tokenizer = AutoTokenizer.from_pretrained(spec["adapter_dir"])
    tokenizer.padding_side = "left"  # generation continues at the right edge
    base = AutoModelForCausalLM.from_pretrained(spec["model_dir"], dtype=torch.bfloat16 if cuda else torch.float32)
    model = PeftModel.from_pretrained(base.to("cuda" if cuda else "cpu"), spec["adapter_dir"]).eval()
    batch = tokenizer(rendered_prompts(tokenizer, GENERATE_PROMPTS), return_tensors="pt", padding=True,
                      add_special_tokens=False).to(model.device)
    options = {"max_new_tokens": GENERATE_TOKENS, "do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0,
               "pad_token_id": tokenizer.pad_token_id}

    def sample() -> list[list[int]]:
        torch.manual_seed(SEED)  # the same random draws each time: only the logits can change the tokens
        return model.generate(**batch, **options)[:, batch["input_ids"].shape[1]:].tolist()

    with torch.no_grad():
        tuned, tuned_logits = sample(), model(**batch).logits
        with model.disable_adapter():
            plain, again, plain_logits = sample(), sample(), model(**batch).logits
    verdict = adapter_verdict(tuned, plain, again)
    verdict["figures"]["max_logit_diff"] = (tuned_logits.float() - plain_logits.float()).abs().max().item()
    return verdict


def work_vllm(spec: dict) -> dict:
    """Unsloth's vLLM engine (fast_inference), seeded sampling without and with the adapter as a LoRA request."""
    import unsloth  # noqa: F401  (before vLLM's transformers imports)
    from unsloth import FastLanguageModel
    from vllm import SamplingParams

    from kit.models.inference import saved_adapter_request

    started = time.perf_counter()
    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=spec["model_dir"], max_seq_length=spec["model"]["max_seq_length"], load_in_4bit=False,
        fast_inference=True, max_lora_rank=spec["lora"]["r"], gpu_memory_utilization=0.5)
    load_seconds = time.perf_counter() - started
    prompts = rendered_prompts(tokenizer, GENERATE_PROMPTS)
    # token ids, not text: the Qwen2.5-shaped model samples ids past the tiny tokenizer's 512 pieces
    params = SamplingParams(temperature=1.0, seed=SEED, max_tokens=GENERATE_TOKENS, detokenize=False)

    def sample(lora_request=None) -> list[list[int]]:
        outputs = model.fast_generate(prompts, sampling_params=params, lora_request=lora_request)
        return [list(o.outputs[0].token_ids) for o in outputs]

    started = time.perf_counter()
    plain, again = sample(), sample()
    tuned = sample(saved_adapter_request(spec["adapter_dir"]))  # the saved folder, as `kit eval --adapter` asks
    seconds = time.perf_counter() - started
    verdict = adapter_verdict(tuned, plain, again)
    tokens = sum(len(t) for t in plain + again + tuned)
    verdict["figures"].update(load_seconds=load_seconds, generate_seconds=seconds, tokens_per_second=tokens / seconds,
                              **memory_figures())
    return verdict


WORKERS = {**shared_workers(), "load": work_load, "grpo-kit": work_grpo_kit, "grpo-unsloth": work_grpo_unsloth,
           "grpo-trl": work_grpo_trl, "merge": work_merge, "generate-hf": work_generate_hf, "vllm": work_vllm}
SIDE_WORKERS = {"kit": "grpo-kit", "unsloth": "grpo-unsloth", "trl": "grpo-trl"}


# --- the driver: one worker process per check, in order -------------------------------------------


def alternation(rounds: int, sides=tuple(SIDES)) -> list[tuple[int, str]]:
    """(round, side) in run order: every side once per round, so drift on the machine hits them alike."""
    return [(r, side) for r in range(1, rounds + 1) for side in sides]


def summarize_side(runs: list[dict]) -> dict:
    """One side's rounds: a failure fails it, a skip skips it, else the median s/step and the largest peak."""
    for status in (FAIL, SKIP):
        hit = next((r for r in runs if r["status"] == status), None)
        if hit:
            return {"status": status, "reason": hit.get("reason"), "runs": runs}
    per_run = [r["figures"]["seconds_per_step"] for r in runs]
    summary = {"status": PASS, "reason": None, "seconds_per_step": statistics.median(per_run),
               "seconds_per_step_by_round": per_run, "runs": runs}
    for key in ("peak_allocated_gib", "peak_reserved_gib", "peak_rss_gib"):
        if key in runs[0]["figures"]:
            summary[key] = max(r["figures"][key] for r in runs)
    return summary


def with_ratios(sides: dict[str, dict]) -> dict[str, dict]:
    """Each side's time and peak as a ratio to the kit's, where both were measured."""
    kit = sides.get("kit", {})
    for name, side in sides.items():
        if name == "kit" or side["status"] != PASS or kit.get("status") != PASS:
            continue
        side["time_vs_kit"] = side["seconds_per_step"] / kit["seconds_per_step"]
        if "peak_allocated_gib" in side and "peak_allocated_gib" in kit:
            side["peak_vs_kit"] = side["peak_allocated_gib"] / kit["peak_allocated_gib"]
    return sides


# --- check lines: figures in words ----------------------------------------------------------------


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


# --- the run --------------------------------------------------------------------------------------


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
    """What the hand-written sides read: the same model, LoRA and GRPOConfig numbers as the kit's config."""
    saving = {"save_steps", "save_minutes", "save_total_limit"}  # the check saves nothing
    grpo = cfg.grpo.model_dump(exclude={"extra", "num_train_epochs", *saving})
    return {"model_dir": str(model_dir), "model": cfg.model.model_dump(mode="json"), "grpo": grpo,
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
    checks += grpo_checks(driver, machine, s, plans, {**shared, "kit_config": config}, work, adapter_dir)
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
             ("vllm adapter", "vllm", ("unsloth", "vllm", "cuda")))
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


def default_out() -> Path:
    return Path("outputs") / f"gpu-check-{time.strftime('%Y%m%d-%H%M%S')}.json"


def write_report(out: Path, record: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), help="default: qwen2.5-1.5b with CUDA, tiny without")
    parser.add_argument("--steps", type=int, help="GRPO steps per run (default: 4 for qwen2.5-1.5b, 3 for tiny)")
    parser.add_argument("--rounds", type=int, help="runs of each GRPO side, alternated (default 2)")
    parser.add_argument("--generations", type=int, help="completions per step, one prompt (default 8 / 4)")
    parser.add_argument("--completion-length", type=int, help="max new tokens per completion (default 128 / 16)")
    parser.add_argument("--out", type=Path, help="the JSON report (default outputs/gpu-check-<time>.json)")
    parser.add_argument("--worker", nargs=2, metavar=("NAME", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("steps", "rounds", "generations", "completion_length"):
        value = getattr(args, name)
        if value is not None and value < (2 if name == "generations" else 1):
            parser.error(f"--{name.replace('_', '-')} must be at least {2 if name == 'generations' else 1}")
    return args


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
    return {"schema": 1, "command": " ".join([Path(sys.argv[0]).as_posix(), *argv]), "commit": commit(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds": seconds, "shape": shape,
            "settings": asdict(s), "machine": {**asdict(machine), "cpu_count": os.cpu_count(),
                                               "platform": platform.platform(), "python": platform.python_version()},
            "plans": plans, "checks": [asdict(c) for c in checks], "ok": exit_code(checks) == 0}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.worker:
        run_worker(WORKERS, args.worker[0], Path(args.worker[1]))
        return 0
    started, out = time.perf_counter(), args.out or default_out()
    exit_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:  # models, adapters, logs: all gone at the end
        driver = Driver(Path(tmp), SHAPES["tiny"].timeout_s, 0, [sys.executable, str(Path(__file__).resolve()),
                                                                 "--worker"])
        machine = probe_machine(driver)
        shape = args.shape or ("qwen2.5-1.5b" if machine.cuda else "tiny")
        s = run_settings(args, shape)
        driver.total, driver.timeout_s = task_count(s), s.timeout_s
        print(headline(machine, shape, s, out), flush=True)
        if machine.driver_problem:
            print(f"gpu_check: note: {machine.driver_problem}", flush=True)
        checks, plans = run_checks(driver, machine, shape, s, Path(tmp))
    seconds = time.perf_counter() - started
    write_report(out, report(argv, seconds, shape, s, machine, plans, checks))
    counts = {status: sum(c.status == status for c in checks) for status in (PASS, FAIL, SKIP)}
    print(f"gpu_check: {counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped in {seconds:.0f} s; "
          f"figures in {out}")
    return exit_code(checks)


if __name__ == "__main__":
    sys.exit(main())
