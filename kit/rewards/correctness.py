"""Is the answer right? Scores in [0, 1] against the row's gold `answer` column.

Every function reads the completion's final answer (an <answer> tag, else \\boxed{}, else "the answer
is ...", else the whole text) and returns None for a row without a gold answer.
"""

from __future__ import annotations

import difflib
import math
import re
import string

from kit.rewards.answers import canonical_number, extract_tag, final_answer, parse_number
from kit.rewards.text import completion_text

_INTEGER = re.compile(r"-?\d+")


def _has_gold(gold) -> bool:
    return gold is not None and str(gold).strip() != ""


def _against_gold_number(completions, answer, score) -> list[float | None]:
    """score(completion text, gold number) for each row; None where the row has no numeric gold answer."""
    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        expected = parse_number(str(gold)) if _has_gold(gold) else None
        scores.append(None if expected is None else score(completion_text(completion), expected))
    return scores


def answer_correct(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when the number in <answer>...</answer> equals the gold answer ('1,000' == '1000.0').

    Strict about format: a completion without an answer tag scores 0. Text gold answers compare
    case-insensitively.
    """
    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        if not _has_gold(gold):
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


def exact_match(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when the final answer equals the gold text, ignoring case and surrounding whitespace."""
    return [None if not _has_gold(gold) else
            float(final_answer(completion_text(c)).strip().lower() == str(gold).strip().lower())
            for c, gold in zip(completions, answer)]


def numeric_match(rel_tol: float = 1e-6, abs_tol: float = 1e-9):
    """Factory: 1.0 when the final answer's number is within tolerance of the gold number."""

    def numeric_correct(completions, answer, **kwargs) -> list[float | None]:
        def score(text: str, expected: float) -> float:
            given = parse_number(final_answer(text))
            return float(given is not None and math.isclose(given, expected, rel_tol=rel_tol, abs_tol=abs_tol))

        return _against_gold_number(completions, answer, score)

    return numeric_correct


def numeric_closeness(within: float):
    """Factory: partial credit for a number near the gold one, 1 - |given - gold| / `within`, floored at 0.

    Reads the <answer> tag only (a reply without one earns nothing). For arithmetic whose answers a small
    model gets wrong in every completion of a group: exact-match rewards are then all 0 and GRPO learns
    nothing, while "closer" still tells the completions apart. Weight it below the exact-match reward.
    """

    def answer_close(completions, answer, **kwargs) -> list[float | None]:
        def score(text: str, expected: float) -> float:
            given = extract_tag(text, "answer")
            number = parse_number(given) if given is not None else None
            return 0.0 if number is None else max(0.0, 1.0 - abs(number - expected) / within)

        return _against_gold_number(completions, answer, score)

    return answer_close


def math_equivalent(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when math-verify finds the final answer equivalent to the gold one (LaTeX, \\boxed{}, 1/2 == 0.5)."""
    from math_verify import parse, verify

    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        if not _has_gold(gold):
            scores.append(None)
            continue
        text = completion_text(completion)
        given = extract_tag(text, "answer")
        try:
            gold_parsed = parse(f"${gold}$" if "$" not in str(gold) else str(gold))
            given_parsed = parse(f"${given}$") if given is not None else parse(text)
            scores.append(float(bool(gold_parsed and given_parsed and verify(gold_parsed, given_parsed))))
        except Exception:  # math-verify raises on some malformed LaTeX; that answer is simply not right
            scores.append(0.0)
    return scores


def fuzzy_match(completions, answer, **kwargs) -> list[float | None]:
    """Similarity of final answer and gold text in [0, 1] (difflib ratio, case and punctuation ignored)."""
    return [None if not _has_gold(gold) else
            difflib.SequenceMatcher(None, _normalize(final_answer(completion_text(c))), _normalize(str(gold))).ratio()
            for c, gold in zip(completions, answer)]


def _normalize(text: str) -> str:
    return " ".join(text.lower().translate(str.maketrans("", "", string.punctuation)).split())
