"""Saving what training made: the LoRA adapter, and the adapter merged into 16-bit base weights.

A model trained in 4-bit is never merged into its dequantized 4-bit weights (that loses the base's
precision for good): the adapter is merged into the base's original 16-bit safetensors, one shard at
a time (kit/export/lora_merge.py), so a 16 GB model merges in far less than 16 GB of RAM, on a GPU machine
and a CPU alike. Everything is written to a temporary folder that is renamed only when complete
(kit.atomic.atomic_dir).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kit.atomic import atomic_dir
from kit.diskspace import disk_space
from kit.export.lora_merge import merge_lora_shards
from kit.models.names import base_16bit_name


def save_adapter(model, tokenizer, out: Path) -> Path:
    with disk_space("the LoRA adapter", out), atomic_dir(out) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return out


def save_full_model(model, tokenizer, base_name: str, out: Path, dtype: str) -> Path:
    """A fully fine-tuned model is its own merged model: written in 16-bit with its tokenizer (and the
    base's SentencePiece file, which transformers does not re-save and GGUF conversion reads)."""
    import torch

    needed = sum(p.numel() for p in model.parameters()) * getattr(torch, dtype).itemsize
    with disk_space("the fully fine-tuned model", out, needed), atomic_dir(out) as tmp:
        model.to(getattr(torch, dtype)).save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        sentencepiece = Path(base_name) / "tokenizer.model"
        if sentencepiece.is_file():
            shutil.copy2(sentencepiece, tmp / "tokenizer.model")
    return out


def save_merged(adapter_dir: Path, base_name: str, out: Path, dtype: str) -> Path:
    """Write the adapter merged into 16-bit base weights to `out` (safetensors + tokenizer + chat template)."""
    base_dir = local_base_weights(base_16bit_name(base_name))
    needed = sum(f.stat().st_size for f in base_dir.glob("*.safetensors"))  # 16-bit in, 16-bit out
    with disk_space("the merged model", out, needed), atomic_dir(out) as tmp:  # atomic_dir cleans up first
        merge_lora_shards(Path(adapter_dir), base_dir, tmp, dtype)
    return out


def local_base_weights(name: str) -> Path:
    """A local folder holding the base model's 16-bit safetensors (fetched from the hub for a hub id)."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download

    print(f"merge: fetching the 16-bit weights of {name} (safetensors, config, tokenizer)")
    return Path(snapshot_download(name, allow_patterns=["*.safetensors", "*.json", "tokenizer.model", "*.jinja"]))


def write_adapter(job) -> Path | None:
    """The `lora` save format (kit.config.formats): none for a fully fine-tuned model."""
    return None if job.full_finetuning else job.adapter()


def write_merged(job) -> Path:
    """The `merged_16bit` save format: the adapter merged into 16-bit weights, or the fully trained weights."""
    dtype, out = job.settings.merged_dtype, job.out.merged
    if job.full_finetuning:  # no adapter: the trained weights are the merged model
        print(f"save: writing the fully fine-tuned model in {dtype} -> {out}")
        return save_full_model(job.model, job.tokenizer, job.base_model, out, dtype)
    adapter = job.adapter()
    print(f"save: merging the adapter into 16-bit ({dtype}) weights -> {out}")
    return save_merged(adapter, job.base_model, out, dtype)
