"""Loading a vision-language model for training: Unsloth's FastVisionModel on a GPU, transformers + PEFT on a CPU.

    model, processor = load_vision_model(ModelConfig(name="unsloth/Qwen2.5-VL-3B-Instruct"), seed=3407)

kit.models.loader sends a model here when its config.json has a vision_config (kit.models.vision_models), except in
a rank of a multi-process run, which loads it as it loads a text model (loader.load_with_peft, with lora_targets
below).
The processor takes the tokenizer's place from here on: TRL's trainers switch to their vision path when given one.

On a GPU, FastVisionModel loads it (4-bit, vLLM with fast_inference) and puts LoRA on the language layers, and on
the vision tower's too when model.finetune_vision_layers is set; Unsloth's vLLM path refuses LoRA on the vision
tower, so the two do not go together (docs/pictures.md). Unsloth's CPU backend refuses FastVisionModel, so a CPU
loads with transformers' image-text-to-text auto class and PEFT.
"""

from __future__ import annotations

from kit import env
from kit.config import ModelConfig
from kit.errors import KitError
from kit.models import load_settings
from kit.models.before_unsloth import before_unsloth
from kit.models.names import resolve_model_name
from kit.models.vision_models import load_processor, model_config


def load_vision_model(cfg: ModelConfig, seed: int = 3407):
    if env.has_gpu():
        return load_with_unsloth(cfg, seed)
    return load_with_transformers(cfg, seed)


def load_with_unsloth(cfg: ModelConfig, seed: int):
    """Read against unsloth 2026.10.9 (models/vision.py: FastModel.from_pretrained, get_peft_model); not run here."""
    import torch

    before_unsloth()
    from unsloth import FastVisionModel

    fast = load_settings.fast_inference_available(cfg)
    if fast and (refusal := vllm_refusal(cfg)):
        raise KitError(refusal)
    if fast and cfg.vllm_standby:
        print("loader: model.vllm_standby is ignored for a vision-language model (Unsloth turns standby off for them)")
    extra = {"gpu_memory_utilization": cfg.gpu_memory_utilization, "max_lora_rank": cfg.lora_rank} if fast else {}
    try:
        model, processor = FastVisionModel.from_pretrained(
            model_name=resolve_model_name(cfg.name), max_seq_length=cfg.max_seq_length,
            load_in_4bit=cfg.load_in_4bit, fast_inference=fast, random_state=seed,
            dtype=None if cfg.dtype == "auto" else getattr(torch, cfg.dtype),
            full_finetuning=cfg.full_finetuning, **extra)
    except OSError as err:
        raise load_settings.cannot_load(cfg, err) from None
    except RuntimeError as err:  # vLLM's engine, worded as the text loader words it
        if not fast:
            raise
        raise load_settings.vllm_failed("load", err) from err
    if cfg.full_finetuning:
        return model, processor
    model = FastVisionModel.get_peft_model(
        model, r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.target_modules),  # scoped by the flags below, as the CPU route's regex is
        finetune_vision_layers=cfg.finetune_vision_layers, finetune_language_layers=True,
        finetune_attention_modules=True, finetune_mlp_modules=True,
        use_gradient_checkpointing=load_settings.checkpointing(cfg.gradient_checkpointing), random_state=seed)
    return model, processor


def vllm_refusal(cfg: ModelConfig) -> str | None:
    """What Unsloth's vLLM path refuses for a vision-language model (unsloth/models/vision.py), said before loading:
    Unsloth says it as a RuntimeError, some of it after vLLM has loaded."""
    before_unsloth()
    from unsloth.models.vision import VLLM_SUPPORTED_VLM

    model_type = (model_config(cfg.name) or {}).get("model_type", "unknown")
    if model_type not in VLLM_SUPPORTED_VLM:
        return (f"model.fast_inference=true: Unsloth's vLLM path serves these vision-language models only: "
                f"{', '.join(VLLM_SUPPORTED_VLM)}; {cfg.name} is {model_type}. Set model.fast_inference=false "
                "(generation with transformers, slower)")
    if cfg.full_finetuning:
        return ("model.full_finetuning=true with model.fast_inference=true: Unsloth's vLLM path trains LoRA only; "
                "set one of them to false")
    if cfg.finetune_vision_layers:
        return ("model.finetune_vision_layers=true with model.fast_inference=true: Unsloth's vLLM path serves LoRA on "
                "the language layers only; set one of them to false")
    return None


def load_with_transformers(cfg: ModelConfig, seed: int):
    import torch
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(seed)
    if cfg.load_in_4bit:
        print("loader: model.load_in_4bit needs a GPU (bitsandbytes); loading float32 weights instead")
    name = resolve_model_name(cfg.name)
    try:
        model = AutoModelForImageTextToText.from_pretrained(name, dtype=load_settings.weights_dtype(cfg, cuda=False))
    except OSError as err:
        raise load_settings.cannot_load(cfg, err) from None
    processor = load_processor(name)
    if not cfg.full_finetuning:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(
            r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout, task_type="CAUSAL_LM",
            target_modules=lora_targets(cfg)))
    if cfg.gradient_checkpointing != "false":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.max_seq_length = cfg.max_seq_length  # as FastVisionModel sets it: Unsloth's SFT trainer reads it there
    return model, processor


def lora_targets(cfg: ModelConfig) -> str:
    """PEFT's regex for model.target_modules: in the language model only, unless finetune_vision_layers, where the
    vision tower's projections (SigLIP's out_proj, fc1, fc2 among them) are added."""
    names = "|".join(cfg.target_modules)
    if cfg.finetune_vision_layers:
        return rf".*\.({names}|out_proj|fc1|fc2)"
    return rf".*(language_model|text_model)\..*\.({names})"
