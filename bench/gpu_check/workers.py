"""gpu_check's workers: each runs in a fresh process (`python -m bench.gpu_check.workers NAME SPEC`, started
by kit.doctor.processes.Driver) and returns {"status", "reason", "figures"}. The model's build, the device
probe and the default route are kit.doctor's, shared with `kit doctor`; the hand-written GRPO sides are in
bench.gpu_check.baselines."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from bench.gpu_check.baselines import work_grpo_settings, work_grpo_trl, work_grpo_unsloth
from bench.gpu_check.settings import MERGED_DTYPE
from bench.gpu_check.stats import compare_merges
from kit.doctor.entry import shared_workers
from kit.doctor.processes import FAIL, PASS, run_worker
from kit.doctor.workers import (
    GENERATE_PROMPTS,
    GENERATE_TOKENS,
    SEED,
    adapter_verdict,
    memory_figures,
    prompt_dataset,
    prompt_rows,
    rendered_prompts,
    token_parity,
    train_timed,
)


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
    """The saved adapter through the kit's own vLLM engine, as `kit eval --adapter` loads it: seeded sampling
    without and with the adapter's LoRA request."""
    from kit.doctor.workers import forget_cached_prompts
    from kit.models.generate import Sampling, prompt_token_ids
    from kit.models.inference import load_for_inference

    # the engine in this process: its scheduling, and so its batches, the same on every draw (vLLM's reproducibility)
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    started = time.perf_counter()
    loaded = load_for_inference(spec["model_dir"], spec["adapter_dir"], spec["model"]["max_seq_length"],
                                backend="vllm", new_tokens=GENERATE_TOKENS)  # kit eval --model M --adapter A
    load_seconds = time.perf_counter() - started
    engine = loaded.model
    prompts = prompt_token_ids(loaded.tokenizer, [row["prompt"] for row in prompt_rows(GENERATE_PROMPTS)])
    sampling = Sampling(max_new_tokens=GENERATE_TOKENS, temperature=1.0, seed=SEED)

    def sample(lora_request=None) -> list[list[int]]:
        """Token ids, compared undecoded: the Qwen2.5-shaped model samples ids past the tiny tokenizer's 512 pieces."""
        forget_cached_prompts(engine.llm)
        return engine.generate(prompts, sampling, lora_request, progress=False)

    started = time.perf_counter()
    plain, again, tuned = sample(), sample(), sample(loaded.lora_request)
    seconds = time.perf_counter() - started
    verdict = adapter_verdict(tuned, plain, again)
    tokens = sum(len(t) for t in plain + again + tuned)
    verdict["figures"].update(load_seconds=load_seconds, generate_seconds=seconds, tokens_per_second=tokens / seconds,
                              **memory_figures())
    return verdict


WORKERS = {**shared_workers(), "load": work_load, "grpo-settings": work_grpo_settings, "grpo-kit": work_grpo_kit,
           "grpo-unsloth": work_grpo_unsloth, "grpo-trl": work_grpo_trl, "merge": work_merge,
           "generate-hf": work_generate_hf, "vllm": work_vllm}


if __name__ == "__main__":
    run_worker(WORKERS, sys.argv[1], Path(sys.argv[2]))
