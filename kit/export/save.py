"""The save step: each format in save.formats written in the registry's order (kit.config.formats)."""

from __future__ import annotations

import importlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.config.formats import FORMATS, SaveFormat
from kit.outputs import RunDir


@dataclass(kw_only=True)
class SaveJob:
    """What the writers share: the trained model, where it goes, and what earlier formats wrote."""

    model: Any
    tokenizer: Any
    out: RunDir
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
