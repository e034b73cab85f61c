"""Format rewards for `<reasoning>...</reasoning><answer>...</answer>`-style output, as factories.

Each factory takes the tag names and returns a named reward function, so a recipe with other tags
(`<think>`, `<solution>`) uses the same code.
"""

from __future__ import annotations

import re

from kit.rewards.text import completion_text

TRAILING_PENALTY_PER_CHAR = 0.001


def strict_xml_format(think: str = "reasoning", answer: str = "answer"):
    """1.0 for exactly `<think>\\n...\\n</think>\\n<answer>\\n...\\n</answer>` and nothing around it."""
    pattern = re.compile(rf"<{think}>\n.+?\n</{think}>\n<{answer}>\n.+?\n</{answer}>\n?", re.DOTALL)

    def strict_format(completions, **kwargs) -> list[float]:
        return [float(pattern.fullmatch(completion_text(c)) is not None) for c in completions]

    return strict_format


def soft_xml_format(think: str = "reasoning", answer: str = "answer"):
    """1.0 when a <think> block is followed by an <answer> block, whatever the whitespace."""
    pattern = re.compile(rf"<{think}>.*?</{think}>\s*<{answer}>.*?</{answer}>", re.DOTALL)

    def soft_format(completions, **kwargs) -> list[float]:
        return [float(pattern.search(completion_text(c)) is not None) for c in completions]

    return soft_format


def xml_tag_count(think: str = "reasoning", answer: str = "answer"):
    """Partial credit: 0.25 for each of the four tags present exactly once, minus 0.001 per character
    of text after the closing answer tag; clipped to [0, 1]."""
    tags = [f"<{think}>", f"</{think}>", f"<{answer}>", f"</{answer}>"]
    closing = tags[-1]

    def xml_count(completions, **kwargs) -> list[float]:
        scores = []
        for completion in completions:
            text = completion_text(completion)
            score = sum(0.25 for tag in tags if text.count(tag) == 1)
            if text.count(closing) == 1:
                score -= len(text.split(closing)[-1].strip()) * TRAILING_PENALTY_PER_CHAR
            scores.append(min(1.0, max(0.0, score)))
        return scores

    return xml_count


_FENCE = re.compile(r"```[\w+-]*\n(.*?)```", re.DOTALL)


def fenced_code(text: str) -> str | None:
    """The first fenced code block's body, or None."""
    match = _FENCE.search(text)
    return match.group(1) if match else None


def code_block(completions, **kwargs) -> list[float]:
    """1.0 when the completion holds a fenced code block (```lang ... ```)."""
    return [float(fenced_code(completion_text(c)) is not None) for c in completions]


def json_format(completions, schema=None, **kwargs) -> list[float]:
    """1.0 for a JSON completion (a fenced ```json block is fine) that also validates against the row's
    `schema` column when the dataset has one; 0.5 for valid JSON that breaks the schema; else 0."""
    import json

    schemas = schema if schema is not None else [None] * len(completions)
    scores = []
    for completion, row_schema in zip(completions, schemas):
        text = completion_text(completion)
        body = fenced_code(text) or text
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            scores.append(0.0)
            continue
        scores.append(1.0 if row_schema in (None, "") or _valid(value, row_schema) else 0.5)
    return scores


def _valid(value, schema) -> bool:
    import json

    import jsonschema

    if isinstance(schema, str):
        schema = json.loads(schema)
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    return True


def tag_format(tag: str = "answer", content: str = r".+?"):
    """Factory: 1.0 when the whole completion (surrounding whitespace aside) is `<tag>content</tag>`."""
    pattern = re.compile(rf"<{tag}>{content}</{tag}>", re.DOTALL)

    def answer_format(completions, **kwargs) -> list[float]:
        return [float(pattern.fullmatch(completion_text(c).strip()) is not None) for c in completions]

    answer_format.__name__ = f"{tag}_format"
    return answer_format
