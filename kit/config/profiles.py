"""The profiles: the smoke run (the tiny model on the recipe's sample data, any machine) and what the full
run changes where there is no GPU. A profile sits above the recipe's defaults and below the YAML file."""

from __future__ import annotations

import copy
from typing import Any

SMOKE, FULL = "smoke", "full"
TINY_PREFIX = "kit:tiny-"  # kit:tiny-llama, kit:tiny-qwen2, kit:tiny-demo: built on the spot by kit.models.tiny
TINY_MODEL = f"{TINY_PREFIX}llama"  # the smoke profile's model; no download
# the smoke profile's model for a recipe with pictures (kit.models.tiny_vision)
TINY_VISION_MODEL = f"{TINY_PREFIX}vision"
SAMPLE_DATA = "sample"  # the recipe's own small data file, written by the kit

# The smoke profile: a few GRPO steps of the tiny model on the recipe's sample data. It proves the
# pipeline runs on any machine in about a minute; it does not train anything useful.
SMOKE_PROFILE: dict[str, Any] = {
    "model": {
        "name": TINY_MODEL,
        "max_seq_length": 512,
        "load_in_4bit": False,
        "fast_inference": False,
        "lora_rank": 8,
        "lora_alpha": 16,
    },
    "data": {"path": SAMPLE_DATA, "max_prompt_length": 384},
    "grpo": {
        "learning_rate": 1e-4,
        "per_device_train_batch_size": 4,  # 1 prompt x 4 generations per step
        "gradient_accumulation_steps": 1,
        "num_generations": 4,
        "max_completion_length": 32,
        "max_steps": 2,
        "optim": "adamw_torch",  # 8-bit Adam needs a GPU
    },
    "sft": {"max_steps": 4, "per_device_train_batch_size": 4, "optim": "adamw_torch", "logging_steps": 1},
    "eval": {"n": 16},
    # the offline judge, SmolLM2-135M, fails the judge calibration (it pays every reply 10/10): the smoke run says
    # so and goes on, since it shows the path works, not a judge that judges
    "judge": {"calibration": "warn"},
}


# The full profile without a GPU: what runs, and fastest, on a CPU (bench/cpu_step_split.py on SmolLM2-135M:
# 4-bit weights 1.19x slower per GRPO step; bfloat16 and gradient checkpointing within 1% of float32 without).
# Below the YAML file and the command line, so a setting given there wins.
CPU_FULL_PROFILE: dict[str, Any] = {
    "model": {"load_in_4bit": False, "fast_inference": False},  # vLLM rollouts need a GPU
    "grpo": {"optim": "adamw_torch"},  # 8-bit Adam needs a GPU
    "sft": {"optim": "adamw_torch"},
}


def resolve_profile(requested: str, gpu: bool) -> str:
    if requested == "auto":
        return FULL if gpu else SMOKE
    return requested


# With a recipe's tools: the tiny tokenizer spells the tools' JSON schemas in ~450 prompt tokens, and a tool
# call with its result takes ~60 of the completion's budget.
SMOKE_WITH_TOOLS: dict[str, Any] = {
    "model": {"max_seq_length": 1024},
    "data": {"max_prompt_length": 768},
    "grpo": {"max_completion_length": 192},
}


def smoke_profile(recipe_has_sample: bool, recipe_has_tools: bool = False, recipe_shows_pictures: bool = False
                  ) -> dict:
    """The smoke layer; a recipe without sample data keeps its own data source."""
    layer = copy.deepcopy(SMOKE_PROFILE)
    if recipe_shows_pictures:
        layer["model"]["name"] = TINY_VISION_MODEL
    if not recipe_has_sample:
        del layer["data"]["path"]
    if recipe_has_tools:
        for section, settings in SMOKE_WITH_TOOLS.items():
            layer[section].update(settings)
    return layer


def profile_layer(profile: str, gpu: bool, recipe_has_sample: bool, recipe_has_tools: bool = False,
                  recipe_shows_pictures: bool = False) -> dict:
    """The settings a resolved profile puts between the recipe's defaults and the YAML file."""
    if profile == SMOKE:
        return smoke_profile(recipe_has_sample, recipe_has_tools, recipe_shows_pictures)
    return {} if gpu else CPU_FULL_PROFILE
