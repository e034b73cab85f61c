"""Is the answer right? Scores in [0, 1] against the row's gold `answer` column.

Every function reads the completion's final answer (an <answer> tag, else \\boxed{}, else "the answer
is ...", else the whole text; answer_correct and numeric_closeness read the tag only) and returns None
for a row without a gold answer. The numeric ones judge the WHOLE answer: it must state one value, so
'18 or 20' and '10:30' earn nothing however right their last number (kit/rewards/whole_answer.py).
answer_correct and numeric_closeness, the arithmetic recipes' rewards, want a gold number written out as one
('23', '$1,200', '1/2'): '14+9' copies "What is 14 plus 9?" and computes nothing. numeric_match and
math_equivalent take any expression of the value ('12/4' for 3), for tasks where that is an answer.
"""

from __future__ import annotations

import difflib
import re
import string

from kit.rewards.answers import canonical_number, extract_tag, final_answer
from kit.rewards.text import completion_text
from kit.rewards.whole_answer import answer_values, math_verify_timeout, numeral_values, same_answer, same_value

_INTEGER = re.compile(r"-?\d+")


def _has_gold(gold) -> bool:
    return gold is not None and str(gold).strip() != ""


def _against_gold_number(completions, answer, score) -> list[float | None]:
    """score(completion text, gold values) for each row; None where the gold answer is not one number."""
    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        expected = answer_values(str(gold)) if _has_gold(gold) else ()
        scores.append(score(completion_text(completion), expected) if expected else None)
    return scores


def answer_correct(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when the whole <answer>...</answer> states the gold value, written out: one number ('1,000' ==
    '1000.0', '$72', '72 dollars', '1/2' and '\\frac{1}{2}' == '0.5').

    Strict about format: a completion without an answer tag scores 0. Two numbers ('18 or 20'), an equation
    ('12/4 = 3') or an expression for a gold number ('14+9' for 23, '12/4' for 3: the question's arithmetic,
    copied) score 0 even when their value is right. A gold that is itself an expression ('\\sqrt{8}') takes any
    expression of its value ('2\\sqrt{2}'); one that is not a value ('Paris') compares as text, ignoring case.
    """
    return [None if not _has_gold(gold) else float(same_answer(extract_tag(completion_text(c), "answer"), gold))
            for c, gold in zip(completions, answer)]


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
    """Factory: 1.0 when the whole final answer is one value within tolerance of the gold number ('3/4', '0.75')."""

    def numeric_correct(completions, answer, **kwargs) -> list[float | None]:
        def score(text: str, expected: tuple) -> float:
            given = answer_values(final_answer(text))
            return float(any(same_value(a, b, rel_tol, abs_tol) for a in given for b in expected))

        return _against_gold_number(completions, answer, score)

    return numeric_correct


def numeric_closeness(within: float):
    """Factory: partial credit for a number near the gold one, 1 - |given - gold| / `within`, floored at 0.

    Reads the <answer> tag only, and only when all of it is one number written out, as answer_correct wants it
    (a reply without one earns nothing, as do '12 or 13' and '6+7'). For arithmetic whose answers a small
    model gets wrong in every completion of a group: exact-match rewards are then all 0 and GRPO learns
    nothing, while "closer" still tells the completions apart. Weight it below the exact-match reward.
    """

    def answer_close(completions, answer, **kwargs) -> list[float | None]:
        def score(text: str, expected: tuple) -> float:
            given = numeral_values(extract_tag(text, "answer"))
            return max([0.0, *(1.0 - float(abs(a - b)) / within for a in given for b in expected)])

        return _against_gold_number(completions, answer, score)

    return answer_close


def last_number_correct(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when the LAST number of the final answer is the gold one, whatever else it says ('18 or 20' counts
    for 20), or when all of the final answer is right by answer_correct's rule ('1/2' for a gold of 0.5).

    The lenient reading of "stated the right number", for evaluation's lenient column: a policy paid by
    this reward would learn to hedge, so train with answer_correct or numeric_match.
    """
    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        if not _has_gold(gold):
            scores.append(None)
            continue
        stated = final_answer(completion_text(completion))
        last = canonical_number(stated)
        scores.append(float((last is not None and last == canonical_number(str(gold))) or same_answer(stated, gold)))
    return scores


def math_equivalent(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when math-verify finds the whole final answer equivalent to the gold one (LaTeX, 1/2 == 0.5).

    Against a gold that is one number, the answer must be one value too ('18 or 20' is not; the rule is
    kit/rewards/whole_answer.py's), equal to it exactly or to math-verify's 6 decimals (0.333333 == 1/3). A
    gold that is not one number ('x^2+1', an interval, an equation) is math-verify's to compare as a whole.
    """
    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        if not _has_gold(gold):
            scores.append(None)
            continue
        given, expected = final_answer(completion_text(completion)), answer_values(str(gold))
        if expected:
            one_value = answer_values(given)
            right = bool(one_value) and (any(same_value(a, b) for a in one_value for b in expected)
                                         or _verified(given, str(gold)))
        else:
            right = _verified(given, str(gold))
        scores.append(float(right))
    return scores


def _verified(given: str, gold: str) -> bool:
    """math-verify's verdict on the whole of `given` as LaTeX against the gold."""
    from math_verify import parse, verify

    timeout = math_verify_timeout()
    try:
        gold_parsed = parse(f"${gold}$" if "$" not in gold else gold, parsing_timeout=timeout)
        given_parsed = parse(f"${given}$", parsing_timeout=timeout)
        return bool(gold_parsed and given_parsed and verify(gold_parsed, given_parsed, timeout_seconds=timeout))
    except Exception:  # math-verify raises on some malformed LaTeX; that answer is simply not right
        return False


def fuzzy_match(completions, answer, **kwargs) -> list[float | None]:
    """Similarity of final answer and gold text in [0, 1] (difflib ratio, case and punctuation ignored)."""
    return [None if not _has_gold(gold) else
            difflib.SequenceMatcher(None, _normalize(final_answer(completion_text(c))), _normalize(str(gold))).ratio()
            for c, gold in zip(completions, answer)]


def _normalize(text: str) -> str:
    return " ".join(text.lower().translate(str.maketrans("", "", string.punctuation)).split())
