"""Is the answer right? Scores in [0, 1] against the row's gold `answer` column."""

from __future__ import annotations

import re

from kit.rewards.answers import canonical_number, extract_tag
from kit.rewards.text import completion_text

_INTEGER = re.compile(r"-?\d+")


def answer_correct(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when the number in <answer>...</answer> equals the gold answer ('1,000' == '1000.0').

    A completion without an answer tag scores 0; a row without a gold answer gets None.
    """
    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        if gold is None or str(gold).strip() == "":
            scores.append(None)
            continue
        given = extract_tag(completion_text(completion), "answer")
        gold_number = canonical_number(str(gold))
        if given is None:
            scores.append(0.0)
        elif gold_number is not None:
            scores.append(float(canonical_number(given) == gold_number))
        else:
            scores.append(float(given.strip().lower() == str(gold).strip().lower()))
    return scores


def integer_answer(completions, **kwargs) -> list[float]:
    """1.0 when the <answer> holds just an integer (GSM8K answers are integers)."""
    scores = []
    for completion in completions:
        given = extract_tag(completion_text(completion), "answer")
        scores.append(float(given is not None and _INTEGER.fullmatch(given) is not None))
    return scores
