"""Merging a LoRA adapter into 16-bit base weights one safetensors shard at a time.

PEFT's `merge_and_unload` needs the whole model in memory, and Colab has about 12 GB of RAM for a
16 GB model. Merging is linear algebra per weight, W' = W + scale * B @ A, so each shard of the base
is read, merged and written on its own; peak memory is about one shard plus the (small) adapter.
Configurations this does not cover (DoRA, per-module rank or alpha patterns, modules_to_save, LoRA
biases) fall back to PEFT's in-memory merge, and say so.

    python -c "from kit.export.lora_merge import merge_lora_shards; merge_lora_shards(ADAPTER, BASE, OUT, 'bfloat16')"
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from kit.errors import KitError

ADAPTER_PREFIX = "base_model.model."
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                    "tokenizer.model", "processor_config.json", "preprocessor_config.json")  # the last two: pictures


def merge_lora_shards(adapter_dir: Path, base_dir: Path, out: Path, dtype: str) -> None:
    """Write base + adapter, merged, to `out`: same shard layout as the base, weights in `dtype`."""
    config = json.loads((adapter_dir / "adapter_config.json").read_text())
    if "quantization_config" in json.loads((base_dir / "config.json").read_text()):
        raise KitError(f"the base model in {base_dir} is stored quantized; merging needs its 16-bit weights: "
                       "point model.name at the 16-bit model (the adapter was trained on the same weights)")
    out.mkdir(parents=True, exist_ok=True)
    unsupported = unsupported_features(config)
    if unsupported:
        print(f"merge: {', '.join(unsupported)} in the adapter: merging in memory with PEFT instead of shard by shard")
        merge_in_memory(adapter_dir, base_dir, out, dtype)
    else:
        lora = adapter_pairs(adapter_dir)
        scale = lora_scale(config)
        used = merge_shards(base_dir, out, lora, scale, getattr(torch, dtype))
        unused = sorted(set(lora) - used)
        if unused:
            raise KitError(f"the adapter has weights for modules the base lacks ({unused[0]}, ...); "
                           "was it trained on a different base model?")
        write_config(base_dir, out, dtype)
    copy_tokenizer(adapter_dir, base_dir, out)


def unsupported_features(config: dict) -> list[str]:
    checks = {
        "DoRA": config.get("use_dora"),
        "rank_pattern": config.get("rank_pattern"),
        "alpha_pattern": config.get("alpha_pattern"),
        "modules_to_save": config.get("modules_to_save"),
        "LoRA bias": config.get("lora_bias") or config.get("bias", "none") != "none",
        "fan_in_fan_out": config.get("fan_in_fan_out"),
    }
    return [name for name, present in checks.items() if present]


def lora_scale(config: dict) -> float:
    rank, alpha = config["r"], config["lora_alpha"]
    return alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank


def adapter_pairs(adapter_dir: Path) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{"model.layers.0.self_attn.q_proj": (A [r, in], B [out, r])} from the adapter file."""
    tensors = load_file(adapter_dir / "adapter_model.safetensors")
    pairs: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in tensors.items():
        for part in ("lora_A", "lora_B"):
            marker = f".{part}."
            if marker in key:
                module = key.removeprefix(ADAPTER_PREFIX).split(marker)[0]
                pairs.setdefault(module, {})[part] = tensor
    incomplete = [m for m, p in pairs.items() if len(p) != 2]
    if incomplete:
        raise KitError(f"adapter in {adapter_dir} is incomplete: {incomplete[0]} lacks lora_A or lora_B")
    return {module: (p["lora_A"], p["lora_B"]) for module, p in pairs.items()}


def base_shards(base_dir: Path) -> list[str]:
    index = base_dir / "model.safetensors.index.json"
    if index.is_file():
        return sorted(set(json.loads(index.read_text())["weight_map"].values()))
    if (base_dir / "model.safetensors").is_file():
        return ["model.safetensors"]
    raise KitError(f"{base_dir} holds no safetensors weights; the merge needs the base model in safetensors")


def merge_shards(base_dir: Path, out: Path, lora: dict, scale: float, dtype: torch.dtype) -> set[str]:
    """Merge shard by shard; returns the modules whose weights were found."""
    used: set[str] = set()
    for name in base_shards(base_dir):
        merged = {}
        with safe_open(str(base_dir / name), framework="pt") as shard:
            for key in shard.keys():
                weight = shard.get_tensor(key)
                module = key.removesuffix(".weight")
                if key.endswith(".weight") and module in lora:
                    a, b = lora[module]
                    weight = weight.float() + scale * (b.float() @ a.float())  # [out, r] @ [r, in]
                    used.add(module)
                merged[key] = weight.to(dtype) if weight.is_floating_point() else weight
        save_file(merged, str(out / name), metadata={"format": "pt"})
        del merged
    index = base_dir / "model.safetensors.index.json"
    if index.is_file():
        shutil.copy2(index, out / index.name)
    return used


def write_config(base_dir: Path, out: Path, dtype: str) -> None:
    config = json.loads((base_dir / "config.json").read_text())
    config["dtype"] = dtype
    config.pop("torch_dtype", None)
    config.pop("quantization_config", None)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    if (base_dir / "generation_config.json").is_file():
        shutil.copy2(base_dir / "generation_config.json", out / "generation_config.json")


def copy_tokenizer(adapter_dir: Path, base_dir: Path, out: Path) -> None:
    """The tokenizer as trained (from the adapter folder), plus the base's SentencePiece file if it has one."""
    for name in _TOKENIZER_FILES:
        for source in (adapter_dir / name, base_dir / name):
            if source.is_file():
                shutil.copy2(source, out / name)
                break


def merge_in_memory(adapter_dir: Path, base_dir: Path, out: Path, dtype: str) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=getattr(torch, dtype), device_map="cpu")
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    merged.save_pretrained(out, safe_serialization=True)
