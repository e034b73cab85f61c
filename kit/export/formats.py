"""What a run can save at its end (`save.formats`), in the order the formats are made.

A new format is a module with a `write(job)` function and one line in FORMATS: the config accepts its
name, the run saves it, and the summary prints where it went. The writer is imported only when its format
is saved, so listing it costs nothing (GGUF's brings llama.cpp).
"""

from __future__ import annotations

import importlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.outputs import VERIFICATION


@dataclass(frozen=True)
class SaveFormat:
    name: str
    writer: str  # "module:function"; the function takes a SaveJob and returns the path it wrote
    label: str  # how the summary names it
    made_from: str | None = None  # a format it is converted from: save.formats must list that one too
    describe: str = ""  # what it is, for messages
    note: str = ""  # after its path in the summary
    failed_note: str = ""  # instead, when it failed its checks


FORMATS = (
    SaveFormat("lora", "kit.export.merged:write_adapter", "adapter", describe="the LoRA adapter"),
    SaveFormat("merged_16bit", "kit.export.merged:write_merged", "merged", describe="the merged 16-bit model",
               note="loads with transformers.AutoModelForCausalLM.from_pretrained"),
    SaveFormat("gguf", "kit.export.gguf.export:write_gguf", "gguf", made_from="merged_16bit",
               describe="GGUF files verified in llama.cpp", note="verified in llama.cpp",
               failed_note=f"FAILED verification: see {VERIFICATION}"),
)
FORMAT_NAMES = tuple(f.name for f in FORMATS)
BY_NAME = {f.name: f for f in FORMATS}


def format_problems(names: list[str]) -> list[str]:
    """A format asked for without the one it is made from (checked with the rest of the config)."""
    return [f"save.formats: {name} is made from {BY_NAME[BY_NAME[name].made_from].describe}; add "
            f"{BY_NAME[name].made_from}" for name in names
            if name in BY_NAME and BY_NAME[name].made_from and BY_NAME[name].made_from not in names]


@dataclass
class SaveJob:
    """What the writers share: the trained model, where it goes, and what earlier formats wrote."""

    model: Any
    tokenizer: Any
    out: Any  # kit.outputs.RunDir
    settings: Any  # the config's `save` section
    base_model: str  # the base's local folder or hub id, resolved
    full_finetuning: bool
    adapter_saved: bool = False  # a sharded run's trainer already wrote OUT/adapter
    written: dict[str, Path] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)  # formats written but failing their checks

    def adapter(self) -> Path:
        """OUT/adapter, written on first use: the lora format, and what merging reads."""
        if not self.adapter_saved:
            from kit.export.merged import save_adapter

            save_adapter(self.model, self.tokenizer, self.out.adapter)
            self.adapter_saved = True
        return self.out.adapter


def save_formats(job: SaveJob, names: list[str]) -> SaveJob:
    """Write each asked-for format in FORMATS' order; an adapter made only for merging is removed after."""
    for fmt in FORMATS:
        if fmt.name in names:
            path = writer(fmt)(job)
            if path is not None:
                job.written[fmt.name] = path
    if "lora" not in names and job.adapter_saved and job.out.adapter.exists():
        shutil.rmtree(job.out.adapter)
    return job


def writer(fmt: SaveFormat):
    module, _, function = fmt.writer.partition(":")
    return getattr(importlib.import_module(module), function)
