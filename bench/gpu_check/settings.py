"""What gpu_check runs: its checks in order, the three GRPO sides, and each shape's settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


SIDES = {"kit": "grpo kit", "unsloth": "grpo unsloth script", "trl": "grpo plain trl"}


CHECKS = ("build model", "load 16-bit", "load 4-bit", *SIDES.values(), "merge vs peft", "adapter hf generate",
          "vllm adapter", "default route")


MERGED_DTYPE = "bfloat16"  # what `kit train` writes by default (save.merged_dtype)


PROMPT_TOKENS = 64  # data.max_prompt_length: the digit prompts below are about 20 tokens


@dataclass(frozen=True)
class Settings:
    """One shape's run: every GRPO side uses these, and `kit plan` is asked about the same."""

    steps: int  # GRPO steps per run; the first warms up and is left out of s/step when there are more
    rounds: int  # kit, unsloth, trl, kit, unsloth, trl, ...: each side runs this many times
    generations: int  # one prompt x this many completions per step
    completion_tokens: int
    max_seq_length: int
    lora_rank: int
    learning_rate: float  # high enough that a few steps move the adapter visibly (the generation checks)
    timeout_s: int  # per worker process


SHAPES = {
    # the kit's tiny Qwen2 (kit.models.tiny.SPECS["qwen2"]): 2 layers x 256, its tokenizer's 512-piece vocab
    "tiny": Settings(steps=3, rounds=2, generations=4, completion_tokens=16, max_seq_length=256, lora_rank=8,
                     learning_rate=1e-3, timeout_s=600),
    # bench/model_configs/Qwen2.5-1.5B-Instruct: 28 layers x 1536, vocab 151,936 (tokens past the tiny
    # tokenizer's 512 decode to nothing; the reward reads token ids, so that does not matter)
    "qwen2.5-1.5b": Settings(steps=4, rounds=2, generations=8, completion_tokens=128, max_seq_length=512,
                             lora_rank=16, learning_rate=1e-4, timeout_s=900),
    # a real pretrained model, reached offline (kit/models/smollm2.py): the kit's overhead on real weights, on a CPU too
    "smollm2": Settings(steps=4, rounds=2, generations=8, completion_tokens=16, max_seq_length=256,
                        lora_rank=16, learning_rate=1e-4, timeout_s=900),
}


CONFIG_FILES = {"qwen2.5-1.5b": REPO / "bench" / "model_configs" / "Qwen2.5-1.5B-Instruct" / "config.json"}


REAL_MODELS = {"smollm2": "kit:smollm2"}  # shapes that copy real weights instead of building random ones
