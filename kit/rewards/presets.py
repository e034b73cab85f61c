"""Ready bundles for common tasks: a reward function per concern, each with its weight.

    from kit.rewards.presets import PRESETS
    REWARDS = PRESETS["math"]()
"""

from __future__ import annotations

from kit.rewards.bundle import RewardBundle
from kit.rewards.code import passes_tests, syntax_valid
from kit.rewards.correctness import exact_match, fuzzy_match, math_equivalent
from kit.rewards.format import code_block, json_format, soft_xml_format, xml_tag_count
from kit.rewards.length import ideal_length, max_length_penalty
from kit.rewards.style import citations, reasoning_connectors, repetition_penalty


def math() -> RewardBundle:
    """Columns: answer. Correctness dominates; format and style keep a signal early on."""
    return RewardBundle(
        (math_equivalent, 2.0),
        (soft_xml_format(), 0.5),
        (xml_tag_count(), 0.5),
        (reasoning_connectors, 0.1),
        (repetition_penalty(), 0.25),
    )


def code() -> RewardBundle:
    """Columns: tests (the row's own test snippets, run in the sandbox)."""
    return RewardBundle((passes_tests(), 2.0), (syntax_valid, 0.5), (code_block("python"), 0.25))


def structured() -> RewardBundle:
    """Columns: schema (optional JSON schema per row)."""
    return RewardBundle((json_format, 1.0), (max_length_penalty(256), 0.25))


def qa() -> RewardBundle:
    """Columns: answer (reference text)."""
    return RewardBundle((exact_match, 1.0), (fuzzy_match, 1.0), (citations, 0.25), (repetition_penalty(), 0.25))


def summarization(target_words: int = 100) -> RewardBundle:
    """Columns: answer (reference summary)."""
    return RewardBundle((fuzzy_match, 1.0), (ideal_length(target_words), 0.5), (repetition_penalty(), 0.5))


PRESETS = {"math": math, "code": code, "json": structured, "qa": qa, "summarization": summarization}
