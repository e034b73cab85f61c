"""Sums of two numbers below 20 ("What is 14 plus 9?"): the real-model CPU demo's task.

    make demo-real                               # SmolLM2-135M-Instruct: SFT warm start, GRPO, export
    make train RECIPE=addition CONFIG=configs/demo_smollm2.yaml

All 400 ordered pairs, split once with a fixed seed: 200 held out for evaluation, 200 for training; no
pair is in both. A small pretrained model knows many of these sums but, after a short warm start on the
format, writes the wrong one about half the time at greedy, while one of 8 samples is right for most
prompts: the gap GRPO closes. The answer format, rewards and scoring are digit_sum's.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from datasets import Dataset

from kit.recipes.digit_sum import EVAL, REWARDS, SAMPLE_COMPLETIONS, read_local, sft_target, write_rows  # noqa: F401

HELD_OUT = 200
LARGEST = 19
DATA = "generated: 400 pairs"

DEFAULTS = {
    "data": {"max_prompt_length": 64},
    "grpo": {"max_completion_length": 12, "per_device_train_batch_size": 32},
}


def pairs(split: str) -> list[tuple[int, int]]:
    """Disjoint splits of all 400 ordered pairs, the same on every machine."""
    every = list(itertools.product(range(LARGEST + 1), repeat=2))
    random.Random("addition-split").shuffle(every)
    return every[:HELD_OUT] if split == "test" else every[HELD_OUT:]


def to_row(a: int, b: int) -> dict:
    return {"prompt": [{"role": "user", "content": f"What is {a} plus {b}?"}], "answer": str(a + b)}


def prepare(split: str, source: str | None):
    """The generated split (source None), or a local file with `prompt` messages and `answer`."""
    if source is None:
        return Dataset.from_list([to_row(*p) for p in pairs(split)])
    return read_local(source, split)


def write_sample(path: Path, split: str) -> None:
    write_rows(path, [to_row(*p) for p in pairs(split)])
