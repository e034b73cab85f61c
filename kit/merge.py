"""Saving what training made: the LoRA adapter, and the adapter merged into 16-bit base weights.

A model trained in 4-bit is never merged into its dequantized 4-bit weights (that loses the base's
precision for good). On a GPU, Unsloth's `save_pretrained_merged` fetches the original 16-bit weights
and merges shard by shard. On a CPU, where Unsloth cannot merge into a 4-bit model, the kit reloads the
base in 16-bit with plain transformers, applies the adapter with PEFT and merges there.
Both write to a temporary folder that is renamed only when complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from kit.env import has_gpu

_PREQUANTIZED_SUFFIXES = ("-unsloth-bnb-4bit", "-bnb-4bit")


@contextmanager
def atomic_dir(final: Path):
    """Yield a temporary folder beside `final`; rename it to `final` only if the block succeeds."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    try:
        yield tmp
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def save_adapter(model, tokenizer, out: Path) -> Path:
    with atomic_dir(out) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return out


def base_16bit_name(name: str) -> str:
    """Unsloth's pre-quantized repos ('...-bnb-4bit') are 4-bit copies of a 16-bit repo without the suffix."""
    for suffix in _PREQUANTIZED_SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def save_merged(model, tokenizer, adapter_dir: Path, base_name: str, out: Path, dtype: str) -> Path:
    """Write the adapter merged into 16-bit base weights to `out` (safetensors + tokenizer + chat template)."""
    with atomic_dir(out) as tmp:
        if has_gpu():
            model.save_pretrained_merged(str(tmp), tokenizer, save_method="merged_16bit")
        else:
            merge_on_cpu(adapter_dir, base_16bit_name(base_name), tmp, dtype)
        copy_sentencepiece_model(base_name, tmp)
    return out


def copy_sentencepiece_model(base_name: str, out: Path) -> None:
    """Keep a local base's `tokenizer.model`: transformers does not re-save it, and GGUF conversion of
    SentencePiece tokenizers reads it."""
    source = Path(base_name) / "tokenizer.model"
    if source.is_file() and not (out / "tokenizer.model").exists():
        shutil.copy2(source, out / "tokenizer.model")


def merge_on_cpu(adapter_dir: Path, base_name: str, out: Path, dtype: str) -> None:
    """Reload the base in 16-bit, apply the adapter and merge it: works for adapters trained in 4-bit too."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(base_name, dtype=getattr(torch, dtype), device_map="cpu")
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    merged.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(str(adapter_dir)).save_pretrained(out)
