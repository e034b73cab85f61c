"""Your own questions and answers as the dataset: a CSV (or JSONL / Parquet) file is all it takes.

    make train RECIPE=csv_qa DATA=my_questions.csv      # columns: question, answer[, answer_type]
    make train RECIPE=csv_qa PROFILE=smoke              # the kit's own sample questions, offline

There is no hub dataset: without DATA=file the recipe stops and says so. Each row is checked against its
own kind of answer, from the optional `answer_type` column (number, text or choice) or, where that is
empty, from the answer itself: a number ('42', '$1,250.50', '3/4') is compared numerically; a short text
(SHORT_TEXT_WORDS words or fewer: a name, a term) must match exactly after normalising (case, punctuation
and extra spaces ignored); a longer text earns its similarity (fuzzy_match), since a sentence can be
worded in several right ways. A choice ('B', 'Paris') always needs an exact match, whatever its length:
a near miss is another option. The model may reason first and ends its reply with `<answer>…</answer>`.
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

from datasets import Dataset

from kit.data import load_table, require_columns
from kit.errors import KitError
from kit.recipe import Passes, Scoring
from kit.rewards import RewardBundle, exact_match, extract_tag, final_answer, fuzzy_match, numeric_match
from kit.rewards.fields import normalise_text
from kit.rewards.text import completion_text

ANSWER_TYPES = ("number", "text", "choice")
DATA = "your file (a sample ships)"
SHORT_TEXT_WORDS = 4  # a text answer this short is matched exactly; a longer one by similarity
RIGHT_FROM = 0.8  # in evaluation, a fuzzy similarity this high counts as right (exact and numeric give 0 or 1)

SYSTEM_PROMPT = ("Answer the question. You may think first; end your reply with the final answer alone "
                 "inside <answer></answer>, e.g. <answer>Paris</answer>.")

# Whole numbers, decimals, thousands commas, a currency sign, a percent sign, a fraction: '-1,250.50', '12%', '3/4'.
_NUMBER_LIKE = re.compile(r"[-\u2212+]?[$€£]?\s*(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?\s*%?|-?\d+\s*/\s*\d+")


def infer_type(answer: str) -> str:
    return "number" if _NUMBER_LIKE.fullmatch(answer.strip()) else "text"


_NUMERIC = numeric_match()


def _score(completion, gold: str, kind: str | None) -> float | None:
    kind = kind or infer_type(gold)
    if kind == "number":
        return _NUMERIC([completion], [gold])[0]
    if kind == "text" and len(gold.split()) > SHORT_TEXT_WORDS:
        return fuzzy_match([completion], [gold])[0]
    given = normalise_text(final_answer(completion_text(completion)))  # punctuation aside: 'B)' == 'B'
    return exact_match([given], [normalise_text(gold)])[0]


def answer_match(completions, answer, answer_type=None, **kwargs) -> list[float | None]:
    """Each row scored by its own kind of answer (see the module docstring); None for a row without one."""
    kinds = answer_type if answer_type is not None else [None] * len(completions)
    return [_score(c, str(gold), kind) if gold is not None and str(gold).strip() else None
            for c, gold, kind in zip(completions, answer, kinds)]


answer_match.reward_range = (0.0, 1.0)


def answer_at_end(completions, **kwargs) -> list[float]:
    """1.0 when the reply ends with its one, non-empty <answer>…</answer> (reasoning before it is fine)."""
    scores = []
    for completion in completions:
        text = completion_text(completion).rstrip()
        once = text.count("<answer>") == 1 and text.count("</answer>") == 1
        scores.append(float(once and text.endswith("</answer>") and bool(extract_tag(text, "answer"))))
    return scores


REWARDS = RewardBundle(
    (answer_match, 1.0),  # right for the row's kind of answer
    (answer_at_end, 0.2),  # the answer in its tag, last
)

DEFAULTS = {
    "data": {"max_prompt_length": 512},
    "grpo": {"max_completion_length": 384},  # room to reason briefly before the answer
}


def prepare(split: str, source: str | None):
    """The user's file -> `prompt` (system + question), `answer` (text) and `answer_type` (number|text|choice)."""
    if source is None:
        raise KitError("recipe csv_qa trains on your own questions and has no hub dataset: pass your file with "
                       "DATA=my_questions.csv (columns question and answer, optionally answer_type: "
                       "number, text or choice), or run PROFILE=smoke for the kit's sample")
    table = load_table(source, "", split)
    where = f"data {source}"
    require_columns(table, ["question", "answer"], where)
    types = table["answer_type"] if "answer_type" in table.column_names else [None] * len(table)
    rows = [_row(question, answer, kind, f"{where}, row {index}")
            for index, (question, answer, kind) in enumerate(zip(table["question"], table["answer"], types))]
    return Dataset.from_list(rows)


def _row(question, answer, kind, where: str) -> dict:
    if not isinstance(question, str) or not question.strip():
        raise KitError(f"{where}: 'question' is empty; every row needs a question")
    gold = _cell_text(answer)
    if not gold:
        raise KitError(f"{where}: 'answer' is empty; every row needs its right answer")
    return {"prompt": to_prompt(question), "answer": gold, "answer_type": _checked_type(kind, gold, where)}


def _cell_text(value) -> str:
    """A cell as text: a CSV reader's 42.0 back to '42'; an empty cell (None, NaN) to ''."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _checked_type(kind, gold: str, where: str) -> str:
    written = _cell_text(kind).lower()
    if not written:
        return infer_type(gold)
    if written not in ANSWER_TYPES:
        raise KitError(f"{where}: answer_type {written!r} is not one of {', '.join(ANSWER_TYPES)}; "
                       "fix it, or leave the cell empty to infer it from the answer")
    if written == "number" and infer_type(gold) != "number":
        raise KitError(f"{where}: answer_type is number but the answer {gold!r} is not a number; "
                       "write the number alone (e.g. 1250.5), or set answer_type to text")
    return written


def to_prompt(question: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


def sft_target(row: dict) -> str:
    return f"<answer>{row['answer']}</answer>"


# --- scoring: right for the row's kind (a fuzzy answer from RIGHT_FROM), and in the required format ---

EVAL = Scoring(strict=(Passes(answer_match, RIGHT_FROM), answer_at_end), lenient=Passes(answer_match, RIGHT_FROM),
               formatted=answer_at_end)


# --- sample data: mixed questions written by the kit, so smoke runs and tests work offline ---

_CAPITALS = {"Kenya": "Nairobi", "Peru": "Lima", "Norway": "Oslo", "Japan": "Tokyo", "Ghana": "Accra",
             "Chile": "Santiago", "Egypt": "Cairo", "Poland": "Warsaw", "Canada": "Ottawa", "Spain": "Madrid",
             "Vietnam": "Hanoi", "Austria": "Vienna", "Cuba": "Havana", "Ireland": "Dublin"}
_WORDS = ["red", "fox", "jumps", "over", "the", "old", "log", "river", "quiet", "blue", "bird", "sings", "at", "dawn"]


def _question(rng: random.Random, kind: int) -> dict:
    """One sample row; every other row leaves answer_type empty, for the recipe to infer."""
    if kind == 0:
        country = rng.choice(sorted(_CAPITALS))
        return {"question": f"What is the capital of {country}?", "answer": _CAPITALS[country], "answer_type": ""}
    if kind == 1:
        a, b = rng.randint(2, 30), rng.randint(2, 12)
        return {"question": f"What is {a} times {b}?", "answer": str(a * b), "answer_type": ""}
    if kind == 2:
        options = rng.sample(range(1, 99), 3)
        letters = "ABC"
        listed = " ".join(f"{letter}) {n}" for letter, n in zip(letters, options))
        return {"question": f"Which number is largest? {listed}", "answer": letters[options.index(max(options))],
                "answer_type": "choice"}
    words = rng.sample(_WORDS, 6)
    return {"question": f"Write these words in reverse order: {' '.join(words)}",
            "answer": " ".join(reversed(words)), "answer_type": "text"}


def write_sample(path: Path, split: str) -> None:
    """64 train or 32 test questions, a quarter of each kind, seeded by split."""
    rng = random.Random(f"csv-qa-sample-{split}")
    rows = [_question(rng, index % 4) for index in range(64 if split == "train" else 32)]
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows))


# --- sample completions for `python -m kit rewards check csv_qa`: each kind of answer, right and wrong ---

def _sample(label: str, completion: str, answer: str, answer_type: str) -> dict:
    return {"label": label, "completion": [{"role": "assistant", "content": completion}], "answer": answer,
            "answer_type": answer_type}


SAMPLE_COMPLETIONS = [
    _sample("number, right", "17 x 3 = 51\n<answer>51</answer>", "51", "number"),
    _sample("number, right as 51.0", "<answer>51.0</answer>", "51", "number"),
    _sample("number, wrong", "<answer>54</answer>", "51", "number"),
    _sample("short text, other case", "<answer>nairobi.</answer>", "Nairobi", "text"),
    _sample("short text, wrong", "<answer>Mombasa</answer>", "Nairobi", "text"),
    _sample("long text, close", "<answer>log old the over jumps fox</answer>", "log the over jumps fox red",
            "text"),
    _sample("choice, right", "<answer>B)</answer>", "B", "choice"),
    _sample("choice, wrong", "<answer>C</answer>", "B", "choice"),
    _sample("right, no tag", "Nairobi", "Nairobi", "text"),
    _sample("right, then chatter", "<answer>51</answer> Hope that helps!", "51", "number"),
    _sample("empty", "", "51", "number"),
]
