"""The default GPU route, as `make train RECIPE=gsm8k` takes it on one GPU, on a tiny random model.

The gsm8k full profile's model settings are kept as they are (4-bit weights, which vLLM reads through the
bitsandbytes plugin; Unsloth's vLLM engine for the GRPO rollouts; LoRA; its share of the GPU); only the model
is a tiny random one of a real architecture, and the run is a few steps long with a higher learning rate, so
that a few steps move the adapter far enough for the evaluation to see it. Then the after-training
evaluation runs as a real run's does: through the live adapter, as a LoRA request to the same engine.
"""

from __future__ import annotations

import time
from pathlib import Path

from kit.doctor.processes import FAIL, PASS
from kit.doctor.workers import (
    GENERATE_PROMPTS,
    GENERATE_TOKENS,
    GIB,
    SEED,
    adapter_verdict,
    forget_cached_prompts,
    memory_figures,
    prompt_dataset,
    prompt_rows,
    token_parity,
    train_timed,
)

ROUTE_RECIPE = "gsm8k"
NEEDS = ("cuda", "unsloth", "trl", "bitsandbytes", "vllm", "vllm-bnb-plugin")  # what the default route loads


def route_config(model_dir: Path, steps: int, completion_tokens: int, learning_rate: float = 1e-3) -> dict:
    """The run's settings: gsm8k's full profile on a GPU, with the model, the length and the saving changed."""
    from kit.recipes import load_recipe

    full = load_recipe(ROUTE_RECIPE).config({}, {"recipe": ROUTE_RECIPE, "profile": "full"}, gpu=True)
    layer = full.model_dump(mode="json")
    layer["model"]["name"] = str(model_dir)
    layer["grpo"] |= {"max_steps": steps, "max_completion_length": completion_tokens, "learning_rate": learning_rate,
                      "save_steps": steps + 1, "save_minutes": None}  # no checkpoint inside the timed steps
    layer |= {"eval": {"n": 0}, "monitor": {"samples": 0}, "save": {"formats": ["lora"]}, "recipe": "doctor"}
    return layer


def vllm_quantization(model) -> str | None:
    """The quantization vLLM's engine reports for its weights ("bitsandbytes" on the 4-bit route)."""
    engine = getattr(model, "vllm_engine", None)
    config = getattr(getattr(engine, "llm_engine", None), "model_config", None)
    return getattr(config, "quantization", None)


def route_problems(model, cfg) -> list[str]:
    """Whether the model really took the default route: 4-bit weights on the training side, vLLM beside them."""
    from kit.models.generate import uses_vllm

    problems = []
    if cfg.model.load_in_4bit and not any(type(m).__name__ == "Linear4bit" for m in model.modules()):
        problems.append("asked for 4-bit weights, but the model has no Linear4bit module")
    if not uses_vllm(model):
        problems.append("the model has no vLLM engine: generation would fall back to transformers")
    return problems


def device_memory() -> dict:
    """What the whole device holds, as the driver counts it: besides torch's memory, the CUDA context and what other
    libraries allocate. (vLLM's sleep allocator is a torch MemPool: torch's reserved counters include it, and keep
    counting it while vLLM sleeps, so only this figure shows what standby released.)"""
    import torch

    if not torch.cuda.is_available():
        return {}
    free, total = torch.cuda.mem_get_info()
    return {"device_used_gib": (total - free) / GIB, "device_total_gib": total / GIB}


def planned_peak(cfg) -> dict:
    """`kit plan`'s figure for these settings on this GPU, beside which the measured peak is written."""
    from kit.plan.preflight import plan_for_run

    plan = plan_for_run(cfg)
    return {"plan_peak_gib": plan.peak_gib, "plan_verdict": plan.verdict} if plan else {}


def sampled_generations(model, tokenizer, lora_request=None) -> list[str]:
    from kit.models.generate import Sampling, generate, uses_vllm

    if uses_vllm(model):  # draws that are compared: each computes its prompts afresh
        forget_cached_prompts(model.vllm_engine)
    prompts = [row["prompt"] for row in prompt_rows(GENERATE_PROMPTS)]
    sampling = Sampling(max_new_tokens=GENERATE_TOKENS, temperature=1.0, seed=SEED)
    return generate(model, tokenizer, prompts, sampling, lora_request=lora_request, progress=False)


def base_generations(model, tokenizer) -> list[str]:
    """The base model's samples: vLLM without a LoRA request; transformers with the adapter switched off."""
    from kit.models.generate import uses_vllm

    if uses_vllm(model):
        return sampled_generations(model, tokenizer)
    with model.disable_adapter():
        return sampled_generations(model, tokenizer)


def work_vllm_engine(spec: dict) -> dict:
    """The kit's loader on the default route's model settings: vLLM's engine with 4-bit weights, then a LoRA
    request for the (new, zero) adapter beside a plain request. Loading already generates two tokens."""
    from kit.config import build_config
    from kit.models import loader  # imports Unsloth first
    from kit.models.generate import live_adapter_request

    cfg = build_config([spec["kit_config"]])
    started = time.perf_counter()
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    load_seconds = time.perf_counter() - started
    problems = route_problems(model, cfg)
    started = time.perf_counter()
    plain = sampled_generations(model, tokenizer)
    tuned = sampled_generations(model, tokenizer, live_adapter_request(model))
    seconds = time.perf_counter() - started
    if not any(plain) or not any(tuned):
        problems.append("vLLM returned empty completions")
    figures = {"load_seconds": load_seconds, "generate_seconds": seconds, "quantization": vllm_quantization(model),
               "prompts": len(plain), "new_tokens": GENERATE_TOKENS, **memory_figures(), **device_memory()}
    return {"status": FAIL if problems else PASS, "reason": "; ".join(problems) or None, "figures": figures}


def work_default_route(spec: dict) -> dict:
    """A few GRPO steps on the default route, then the held-out evaluation's path: the live adapter as a LoRA
    request. The adapter moved, so seeded samples with it must differ from the base model's."""
    from kit.config import build_config
    from kit.models import loader  # imports Unsloth first
    from kit.models.generate import live_adapter_request
    from kit.rewards import RewardBundle
    from kit.train.stages.grpo import build_trainer, grpo_args, held_settings

    cfg = build_config([spec["kit_config"]])
    out = Path(spec["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    rewards = RewardBundle((token_parity, 1.0))
    started = time.perf_counter()
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    load_seconds = time.perf_counter() - started
    problems = route_problems(model, cfg)
    trainer = build_trainer(cfg, grpo_args(cfg, out, rewards), model, tokenizer, prompt_dataset(), rewards, out)
    figures = {"load_seconds": load_seconds, **train_timed(trainer, cfg, out), **device_memory(), **planned_peak(cfg),
               "use_vllm": bool(getattr(trainer.args, "use_vllm", False)),
               "trainer_settings": held_settings(cfg, trainer.args)}
    if not figures["use_vllm"]:
        problems.append("GRPO's rollouts did not use vLLM (trainer.args.use_vllm is false)")
    plain, again = base_generations(model, tokenizer), base_generations(model, tokenizer)
    tuned = sampled_generations(model, tokenizer, live_adapter_request(model))
    evaluation = adapter_verdict(tuned, plain, again)
    figures["evaluation"] = evaluation["figures"]
    if evaluation["status"] != PASS:
        problems.append(f"evaluation through the live adapter: {evaluation['reason']}")
    return {"status": FAIL if problems else PASS, "reason": "; ".join(problems) or None, "figures": figures}


def route_gaps(machine) -> list[str]:
    """Why the default route cannot run here: what it loads and the machine lacks, or a GPU the pinned stack has
    no kernels for (kit.plan.gpus); empty when it can."""
    from kit.plan.gpus import too_old

    capability = too_old(machine.gpu or "", machine.capability) if machine.cuda else None
    old = [f"the GPU is too old for the stack (compute capability {capability})"] if capability else []
    return machine.gaps(NEEDS) or old


def route_summary(f: dict) -> str:
    planned = f"kit plan: {f['plan_peak_gib']:.1f} GiB" if "plan_peak_gib" in f else "no plan"
    e = f["evaluation"]
    probed = f", memory probe: {f['probe_peak_gib']:.1f} GiB" if "probe_peak_gib" in f else ""
    return (f"{len(f['step_seconds'])} steps, {f['seconds_per_step']:.2f} s/step with vLLM rollouts; peak "
            f"{f['peak_allocated_gib']:.2f} GiB allocated by torch, {f['device_used_gib']:.1f} GiB in use on the "
            f"device ({planned}{probed}); the live adapter's samples differ from the base on "
            f"{e['differing_prompts']} of {e['prompts']} prompts")
