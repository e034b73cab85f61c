"""Sums of three digits ("What is 4 plus 7 plus 2?"): the task a tiny model learns on a CPU in minutes.

    make demo                                   # SFT warm start, then GRPO, then export: configs/demo_cpu.yaml
    make train RECIPE=digit_sum CONFIG=configs/demo_cpu.yaml

All 1,000 ordered digit triples, split once with a fixed seed: 200 held out for evaluation, 800 for
training; no triple is in both. The answer is one tag, `<answer>13</answer>`, rewarded for being
right and for the format. Right means the number itself: `<answer>4+7+2</answer>` equals 13 but copies the
question, and earns nothing (answer_correct wants a gold number written out).
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

from datasets import Dataset

from kit.data import load_table, require_columns
from kit.recipe import Scoring
from kit.rewards import (
    RewardBundle,
    answer_correct,
    last_number_correct,
    numeric_closeness,
    tag_format,
)

HELD_OUT = 200
DATA = "generated: three-digit sums"
ANSWER_FORMAT = tag_format("answer", r"-?\d+")

REWARDS = RewardBundle(
    (answer_correct, 1.0),  # the <answer> holds the right number, written out (not '4+7+2')
    (ANSWER_FORMAT, 0.2),  # the whole reply is one <answer>N</answer>
    # partial credit for a near miss, off unless a config weights it (rewards: {answer_close: 0.5}): a model
    # that gets every completion of a group wrong still learns which were closer
    (numeric_closeness(within=10), 0.0),
)

DEFAULTS = {
    "data": {"max_prompt_length": 64},
    "grpo": {"max_completion_length": 12, "per_device_train_batch_size": 64},
}


def triples(split: str) -> list[tuple[int, int, int]]:
    """Disjoint splits of all 1,000 digit triples, the same on every machine."""
    every = list(itertools.product(range(10), repeat=3))
    random.Random("digit-sum-split").shuffle(every)
    return every[:HELD_OUT] if split == "test" else every[HELD_OUT:]


def to_row(a: int, b: int, c: int) -> dict:
    return {"prompt": [{"role": "user", "content": f"What is {a} plus {b} plus {c}?"}], "answer": str(a + b + c)}


def prepare(split: str, source: str | None):
    """The generated split (source None), or a local file with `prompt` messages and `answer`."""
    if source is None:
        return Dataset.from_list([to_row(*t) for t in triples(split)])
    return read_local(source, split)


def read_local(source: str, split: str):
    """A local file of `prompt` messages and `answer`s, answers as text (also the addition recipe's)."""
    table = load_table(source, "", split)
    require_columns(table, ["prompt", "answer"], f"data {source}")
    return table.map(lambda row: {"answer": str(row["answer"])})


def write_rows(path: Path, rows: list[dict]) -> None:
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows))


def write_sample(path: Path, split: str) -> None:
    write_rows(path, [to_row(*t) for t in triples(split)])


def sft_target(row: dict) -> str:
    return f"<answer>{row['answer']}</answer>"


# strict: the right number, in a reply that is one <answer>N</answer>; lenient: the last number stated
EVAL = Scoring(strict=(answer_correct, ANSWER_FORMAT), lenient=last_number_correct, formatted=ANSWER_FORMAT)

SAMPLE_COMPLETIONS = [
    {"label": "right", "completion": "<answer>13</answer>", "answer": "13"},
    {"label": "wrong", "completion": "<answer>12</answer>", "answer": "13"},
    {"label": "right, no tag", "completion": "13", "answer": "13"},
    {"label": "right, extra text", "completion": "<answer>13</answer> because 4+7+2", "answer": "13"},
    {"label": "the question's sum copied, unpaid", "completion": "<answer>4+7+2</answer>", "answer": "13"},
    {"label": "empty", "completion": "", "answer": "13"},
]
