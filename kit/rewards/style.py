"""Style rewards: reasoning connectors, citations, and a penalty for repeating itself."""

from __future__ import annotations

import re

from kit.rewards.text import completion_text

CONNECTORS = ("because", "therefore", "thus", "hence", "so", "since", "first", "then", "next", "finally")
_WORD = re.compile(r"[a-z']+")
_CITATION = re.compile(r"\[\d+\]|\([A-Z][A-Za-z-]+(?: et al\.)?,? \d{4}\)|https?://\S+")


def reasoning_connectors(completions, **kwargs) -> list[float]:
    """Distinct connectives of a chain of reasoning ('because', 'therefore', 'first', ...): 3 or more = 1.0."""
    scores = []
    for completion in completions:
        words = set(_WORD.findall(completion_text(completion).lower()))
        scores.append(min(1.0, len(words.intersection(CONNECTORS)) / 3))
    return scores


def citations(completions, **kwargs) -> list[float]:
    """References: '[1]', '(Smith, 2020)' or a URL; 2 or more = 1.0."""
    return [min(1.0, len(_CITATION.findall(completion_text(c))) / 2) for c in completions]


def repetition_penalty(n: int = 3):
    """Factory: the share of word n-grams that are not repeats (1.0 = no n-gram repeated)."""

    def no_repetition(completions, **kwargs) -> list[float]:
        scores = []
        for completion in completions:
            words = completion_text(completion).lower().split()
            grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
            scores.append(len(set(grams)) / len(grams) if grams else 1.0)
        return scores

    return no_repetition
