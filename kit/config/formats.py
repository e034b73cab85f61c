"""What a run can save at its end (`save.formats`), in the order the formats are made.

A new format is a module with a `write(job)` function and one line in FORMATS: the config accepts its
name, the run saves it (kit.export.save), and the summary prints where it went. Writers are named, not
imported: the config must not load the export stack, and GGUF's writer brings llama.cpp.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    SaveFormat("hub", "kit.export.hub:write_hub", "hub", made_from="merged_16bit",
               describe="an upload to the Hugging Face hub (save.hub_repo)",
               note="merged model, adapter, GGUFs, the run's record and a model card",
               failed_note="FAILED: the upload did not finish (see the error above); kit push OUT --repo ... retries"),
)
FORMAT_NAMES = tuple(f.name for f in FORMATS)
BY_NAME = {f.name: f for f in FORMATS}


def format_problems(names: list[str]) -> list[str]:
    """A format asked for without the one it is made from (checked with the rest of the config)."""
    return [f"save.formats: {name} is made from {BY_NAME[BY_NAME[name].made_from].describe}; add "
            f"{BY_NAME[name].made_from}" for name in names
            if name in BY_NAME and BY_NAME[name].made_from and BY_NAME[name].made_from not in names]
