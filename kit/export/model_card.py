"""The README.md a pushed model carries: what it was trained from, on what, how it scored, how to run it.

    text = model_card(RunDir("outputs/run"), "me/qwen-gsm8k")   # from OUT/run.yaml, eval.json, gguf/
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from kit.eval.evaluate import EvalResult, format_table
from kit.outputs import VERIFICATION, RunDir

TRAINING_FOLDER = "training"  # the run's record in the repository: run.yaml, eval.json, metrics, plots, report

SETTINGS = {  # section -> the keys a reader of the card wants, in this order
    "model": ("max_seq_length", "load_in_4bit", "lora_rank", "lora_alpha"),
    "grpo": ("learning_rate", "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
             "max_completion_length", "max_steps", "beta", "loss_type", "temperature"),
}


def model_card(out: RunDir, repo_id: str) -> str:
    run = yaml.safe_load(out.run_file.read_text()) if out.run_file.is_file() else {}
    base, recipe = (run.get("model") or {}).get("name", "unknown"), run.get("recipe", "unknown")
    parts = [front_matter(base), f"# {repo_id.split('/')[-1]}", "",
             f"`{base}` fine-tuned with GRPO on the `{recipe}` recipe of grpo-kit (Unsloth + TRL).", ""]
    parts += evaluation_section(out) + files_section(out, repo_id) + settings_section(run)
    return "\n".join(parts) + "\n"


def front_matter(base: str) -> str:
    from kit.models import smollm2

    tags = ["grpo", "trl", "unsloth", "reinforcement-learning"]
    hub_base = smollm2.HUB_ID if base == smollm2.ALIAS else base  # the hub knows the model, not the kit's alias
    meta = {"library_name": "transformers", "tags": tags}
    if "/" in hub_base and not hub_base.startswith(("/", ".", "kit:")):  # a hub id, not a local folder
        meta = {"base_model": hub_base, **meta}
    return "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n"


def evaluation_section(out: RunDir) -> list[str]:
    if not out.eval.is_file():
        return ["## Evaluation", "", "No held-out evaluation was run (eval.n = 0, or no held-out data).", ""]
    results = [EvalResult.from_json(r) for r in json.loads(out.eval.read_text())["results"]]
    return ["## Evaluation", "",
            "Held-out prompts the model never trained on, greedy decoding, before and after training "
            "(strict: the whole answer right in the required format; lenient: right anywhere in the reply):", "",
            "```", format_table(results), "```", ""]


def files_section(out: RunDir, repo_id: str) -> list[str]:
    lines = ["## Files", ""]
    if out.merged.is_dir():
        lines += ["- the repository root: the LoRA merged into 16-bit weights (safetensors), for transformers "
                  "and vLLM", "", "```python", "from transformers import AutoModelForCausalLM, AutoTokenizer",
                  f'model = AutoModelForCausalLM.from_pretrained("{repo_id}")',
                  f'tokenizer = AutoTokenizer.from_pretrained("{repo_id}")', "```", ""]
    if out.adapter.is_dir():
        lines += ["- `adapter/`: the LoRA adapter alone (PEFT), to apply to the base model", ""]
    for gguf in sorted(out.gguf.glob("*.gguf")) if out.gguf.is_dir() else []:
        lines += [f"- `gguf/{gguf.name}`: for llama.cpp and Ollama ({verification(out, gguf.name)}); "
                  "`gguf/Modelfile` holds the chat template and stop tokens for `ollama create`"]
    return lines + [""]


def verification(out: RunDir, file_name: str) -> str:
    path = out.gguf / VERIFICATION
    reports = json.loads(path.read_text()) if path.is_file() else []
    report = next((r for r in reports if Path(str(r.get("file", ""))).name == file_name), None)
    if report is None:
        return "not verified"
    return "verified in llama.cpp against the merged model" if report.get("ok") else "FAILED verification"



def stage_text(entry) -> str:
    """A `stages` entry as written: `sft`, or `{grpo: {max_steps: 50, ...}}` on one line."""
    import yaml

    return entry if isinstance(entry, str) else yaml.safe_dump(entry, default_flow_style=True, width=1000).strip()

def settings_section(run: dict) -> list[str]:
    if not run:
        return []
    lines = ["## Training settings", ""]
    for section, keys in SETTINGS.items():
        values = run.get(section) or {}
        lines += [f"- {section}.{key}: `{values[key]}`" for key in keys if key in values]
    stages = run.get("stages")
    if stages:
        lines.append(f"- stages: {', '.join(map(stage_text, stages))}")
    versions = run.get("versions") or {}
    if versions:
        lines += ["", "Versions: " + ", ".join(f"{name} {version}" for name, version in versions.items())]
    record = f"{TRAINING_FOLDER}/{RunDir('.').run_file.name}"
    return lines + ["", f"The whole configuration is `{record}` in this repository."]
