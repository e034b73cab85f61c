"""Find a hidden number from higher/lower hints: a multi-turn environment that owns its reward.

    make train RECIPE=guess_number PROFILE=smoke        # offline, the kit's tiny model
    make train RECIPE=guess_number                      # the generated rows, the configured model

Each rollout gets its own `HiddenNumber` (TRL's environment_factory): `reset` reads the row's secret, the
model calls `guess(number)` and reads "higher", "lower" or "correct", over as many turns as it needs (at
most grpo.max_tool_calling_iterations). `get_reward` pays for finding it in few guesses: 1.0 within the
binary-search bound, then 0.1 less per extra guess; TRL adds it as the reward `HiddenNumber`. The recipe's
own rewards ask that the last turn names the number. The rows are generated (a secret per row, seeded per
split); there is no hub dataset for a game the kit defines.
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

from datasets import Dataset

from kit.data import load_table, require_columns
from kit.recipe import Scoring
from kit.rewards import RewardBundle
from kit.rewards.text import completion_text

LARGEST = 50
BOUND = math.ceil(math.log2(LARGEST))  # guesses binary search needs at most: 6
SYSTEM_PROMPT = (f"I picked a whole number from 1 to {LARGEST}. Find it with the guess tool; each guess tells you "
                 "higher, lower or correct. When it is correct, reply with the number.")
SPLIT_SIZES = {"train": 400, "test": 100}
DATA = "generated: numbers 1-50"


class HiddenNumber:
    """One game: the secret, and the guesses made so far."""

    def __init__(self):
        self.secret, self.guesses, self.solved = 0, 0, False

    def reset(self, secret: int = 0, **row) -> None:
        self.secret, self.guesses, self.solved = int(secret), 0, False

    def guess(self, number: int) -> str:
        """Guess the hidden number.

        Args:
            number: a whole number from 1 to 50
        """
        if self.solved:
            return f"already found: it is {self.secret}"
        value = int(number)  # a string like "25" is accepted; "twenty" raises, which the model reads as the result
        self.guesses += 1
        if value == self.secret:
            self.solved = True
            return f"correct: it is {self.secret}"
        return "higher" if value < self.secret else "lower"

    def get_reward(self) -> float:
        if not self.solved:
            return 0.0
        return max(0.1, 1.0 - 0.1 * max(0, self.guesses - BOUND))


ENVIRONMENT = HiddenNumber


def names_the_number(completions, secret, **kwargs) -> list[float]:
    """1.0 when the last number of the last turn is the secret (the game's answer), found by a guess or not."""
    last_numbers = [(re.findall(r"\d+", completion_text(c)) or [None])[-1] for c in completions]
    return [float(n == str(s)) for n, s in zip(last_numbers, secret)]


def found_it(completions, environments, **kwargs) -> list[float]:
    """1.0 when this rollout's environment saw a correct guess (weight 0: for evaluation, not paid twice)."""
    return [float(e.solved) for e in environments]


REWARDS = RewardBundle((names_the_number, 0.2), (found_it, 0.0))
# strict: found with a guess and named in the last turn; lenient: found
EVAL = Scoring(strict=(found_it, names_the_number), lenient=found_it)

DEFAULTS = {
    "data": {"max_prompt_length": 320},
    "grpo": {"max_tool_calling_iterations": 8},  # the kit's 256 tokens hold 8 guesses and their hints
}


def secrets(split: str) -> list[int]:
    rng = random.Random(f"guess-number-{split}")
    return [rng.randint(1, LARGEST) for _ in range(SPLIT_SIZES[split])]


def to_row(secret: int) -> dict:
    return {"prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "Start guessing."}],
            "secret": secret}


def prepare(split: str, source: str | None):
    """The generated games (source None), or a local file with `prompt` messages and `secret`."""
    if source is None:
        return Dataset.from_list([to_row(s) for s in secrets(split)])
    table = load_table(source, "", split)
    require_columns(table, ["prompt", "secret"], f"data {source}")
    return table


def write_sample(path: Path, split: str) -> None:
    Path(path).write_text("".join(json.dumps(to_row(s)) + "\n" for s in secrets(split)[:64]))


def _guess(n: int) -> dict:
    return {"type": "function", "function": {"name": "guess", "arguments": {"number": n}}}


def sft_target(row: dict) -> list[dict]:
    """A binary search, played on a real environment: its calls and hints, then the number."""
    game, low, high, messages = HiddenNumber(), 1, LARGEST, []
    game.reset(row["secret"])
    while not game.solved:
        middle = (low + high) // 2
        hint = game.guess(middle)
        messages += [{"role": "assistant", "content": "", "tool_calls": [_guess(middle)]},
                     {"role": "tool", "name": "guess", "content": hint}]
        low, high = (middle + 1, high) if hint == "higher" else (low, middle - 1) if hint == "lower" else (low, high)
    return [*messages, {"role": "assistant", "content": str(row["secret"])}]


SAMPLE_COMPLETIONS = [
    {"label": "binary search", "secret": 37, "completion": sft_target({"secret": 37})},
    {"label": "found, number not named", "secret": 37,
     "completion": [*sft_target({"secret": 37})[:-1], {"role": "assistant", "content": "Done!"}]},
    {"label": "named without guessing", "secret": 37, "completion": [{"role": "assistant", "content": "37"}]},
    {"label": "one wrong guess", "secret": 37,
     "completion": [{"role": "assistant", "content": "", "tool_calls": [_guess(10)]},
                    {"role": "tool", "name": "guess", "content": "higher"}, {"role": "assistant", "content": "10"}]},
]
