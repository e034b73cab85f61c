"""Loading a model for GRPO: Unsloth's FastLanguageModel (4-bit, LoRA, vLLM where there is a GPU).

    from kit.loader import load_model
    model, tokenizer = load_model(ModelConfig(name="unsloth/Qwen2.5-1.5B-Instruct"), seed=3407)

Unsloth must be imported before TRL and transformers' trainers so that its patches apply; every
module that trains imports this one first.
"""

from __future__ import annotations

import os

from kit.config import ModelConfig
from kit.env import has_gpu, has_vllm
from kit.errors import KitError
from kit.model_names import resolve_model_name

os.environ.setdefault("UNSLOTH_DISABLE_STATISTICS", "1")  # no network calls at load time
import unsloth  # noqa: E402,F401  (must come before trl / transformers trainers)
import torch  # noqa: E402
from unsloth import FastLanguageModel  # noqa: E402


def fast_inference_available(cfg: ModelConfig) -> bool:
    """Whether vLLM generation can be used as asked; says why not, in one line, when it cannot."""
    if not cfg.fast_inference:
        return False
    if not has_gpu():
        print("loader: model.fast_inference=true needs a GPU (vLLM); none here, so generation uses "
              "transformers instead. Set model.fast_inference=false to silence this.")
        return False
    if not has_vllm():
        print("loader: model.fast_inference=true needs vLLM, which is not installed (pip install -e '.[gpu]'); "
              "generation uses transformers instead.")
        return False
    return True


def load_model(cfg: ModelConfig, seed: int = 3407):
    """Load `cfg.name` with Unsloth and wrap it in LoRA adapters (unless full_finetuning); returns (model, tokenizer)."""
    fast = fast_inference_available(cfg)
    extra = {"gpu_memory_utilization": cfg.gpu_memory_utilization, "max_lora_rank": cfg.lora_rank} if fast else {}
    try:
        model, tokenizer = FastLanguageModel.from_pretrained(
            model_name=resolve_model_name(cfg.name),
            max_seq_length=cfg.max_seq_length,
            load_in_4bit=cfg.load_in_4bit,
            fast_inference=fast,
            dtype=None if cfg.dtype == "auto" else getattr(torch, cfg.dtype),
            random_state=seed,
            full_finetuning=cfg.full_finetuning,
            **extra,
        )
    except OSError as err:  # not on the hub, no network, no cached copy
        raise KitError(
            f"cannot load model {cfg.name} ({str(err).splitlines()[0]}); offline, give a local folder "
            "with MODEL=path, or run PROFILE=smoke for the kit's tiny model"
        ) from None
    if cfg.full_finetuning:
        return model, _with_pad(tokenizer)
    model = FastLanguageModel.get_peft_model(
        model,
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=cfg.target_modules,
        use_gradient_checkpointing=_checkpointing(cfg.gradient_checkpointing),
        random_state=seed,
    )
    return model, _with_pad(tokenizer)


def _with_pad(tokenizer):
    if tokenizer.pad_token is None:  # GRPO pads batches of prompts; most chat tokenizers already have one
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _checkpointing(value: str):
    return {"unsloth": "unsloth", "true": True, "false": False}[value]
