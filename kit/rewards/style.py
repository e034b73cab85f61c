"""Style rewards: reasoning connectors, numbered steps, citations, and a penalty for repeating itself."""

from __future__ import annotations

import re

from kit.rewards.text import completion_text

CONNECTORS = ("because", "therefore", "thus", "hence", "so", "since", "first", "then", "next", "finally")
_WORD = re.compile(r"[a-z']+")
_CITATION = re.compile(r"\[\d+\]|\([A-Z][A-Za-z-]+(?: et al\.)?,? \d{4}\)|https?://\S+")

# Where a step starts: "Step 2:", a numbered or bulleted line, or an ordinal transition ("First,", "Finally,").
_STEP = re.compile(r"\b[Ss]tep \d+:|^[ \t]*\d+[.)][ \t]|^[ \t]*[-*•][ \t]|\b(?:First|Second|Third|Next|Then|Finally),",
                   re.MULTILINE)
STEPS_FOR_FULL_MARKS = 3

# Scripts written without spaces between words: there, each character is a unit of repetition.
_UNSPACED = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_UNIT = re.compile(rf"[{_UNSPACED}]|[^\s{_UNSPACED}]+")


def reasoning_connectors(completions, **kwargs) -> list[float]:
    """Distinct connectives of a chain of reasoning ('because', 'therefore', 'first', ...): 3 or more = 1.0."""
    scores = []
    for completion in completions:
        words = set(_WORD.findall(completion_text(completion).lower()))
        scores.append(min(1.0, len(words.intersection(CONNECTORS)) / 3))
    return scores


def reasoning_steps(completions, **kwargs) -> list[float]:
    """Step-by-step reasoning: steps / 3, capped at 1. A step starts at "Step N:", a numbered ("1.") or
    bulleted ("- ", "* ") line, or "First,", "Second,", "Next,", "Finally," ...; it runs to the next step or
    the end of the line. A step with no text, or with the text of an earlier step, does not count, so
    "Step 1: Step 2: Step 3:" or one step pasted three times earns what one step earns."""
    return [min(1.0, _distinct_steps(completion_text(c)) / STEPS_FOR_FULL_MARKS) for c in completions]


def _distinct_steps(text: str) -> int:
    starts = list(_STEP.finditer(text))
    bodies = set()
    for here, following in zip(starts, starts[1:] + [None]):
        end = following.start() if following else len(text)
        body = text[here.end():end].split("\n", 1)[0].strip().lower()
        if body:
            bodies.add(body)
    return len(bodies)


def citations(completions, **kwargs) -> list[float]:
    """References: '[1]', '(Smith, 2020)' or a URL; 2 or more = 1.0."""
    return [min(1.0, len(_CITATION.findall(completion_text(c))) / 2) for c in completions]


def repetition_penalty(n: int = 3):
    """Factory: the share of n-grams that are not repeats (1.0 = no n-gram repeated). The units are words,
    and single characters in scripts written without spaces (Chinese, Japanese, Thai, ...), so "这个这个这个"
    repeats itself as "the the the" does. Open-r1's penalty with max_penalty -p is -p x (1 - this)."""

    def no_repetition(completions, **kwargs) -> list[float]:
        scores = []
        for completion in completions:
            units = _UNIT.findall(completion_text(completion).lower())
            grams = [tuple(units[i : i + n]) for i in range(len(units) - n + 1)]
            scores.append(len(set(grams)) / len(grams) if grams else 1.0)
        return scores

    return no_repetition
