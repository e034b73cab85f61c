"""Format rewards for `<reasoning>...</reasoning><answer>...</answer>`-style output, as factories.

Each factory takes the tag names and returns a named reward function, so a recipe with other tags
(`<think>`, `<solution>`) uses the same code.
"""

from __future__ import annotations

import functools
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


_FENCE = re.compile(r"```([\w+#.-]*)[ \t]*\n(.*?)```", re.DOTALL)
# Fence tags that name the same language: ```py is Python, ```js JavaScript.
LANGUAGE_TAGS = {
    "python": {"python", "py", "python3"},
    "javascript": {"javascript", "js", "node"},
    "typescript": {"typescript", "ts"},
    "cpp": {"cpp", "c++", "cxx"},
    "csharp": {"csharp", "cs", "c#"},
    "bash": {"bash", "sh", "shell"},
}


def fenced_code(text: str, language: str | None = None) -> str | None:
    """The body of the first fenced code block, or None. With `language`, the first block tagged with it
    (or with no tag at all); a block in another language is not it."""
    for tag, body in _FENCE.findall(text):
        if language is None or not tag or _names(tag, language):
            return body
    return None


def _names(tag: str, language: str) -> bool:
    language = language.lower()
    return tag.lower() in LANGUAGE_TAGS.get(language, {language})


def code_block(language: str | None = "python"):
    """Factory: 1.0 for a fenced block tagged with `language` (```python; ```py too), 0.5 for an untagged
    fence (the code can be found, its language is not stated), 0 for none or only other languages' blocks.
    A dataset `language` column sets it per row (mixed-language data); language=None takes any block."""

    default = language

    def code_block(completions, language=None, **kwargs) -> list[float]:
        per_row = language if language is not None else [default] * len(completions)
        return [_block_score(completion_text(c), lang) for c, lang in zip(completions, per_row)]

    return code_block


def _block_score(text: str, language: str | None) -> float:
    tags = [tag for tag, _ in _FENCE.findall(text)]
    if any(tag and (language is None or _names(tag, language)) for tag in tags):
        return 1.0
    return 0.5 if "" in tags else 0.0


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

    text = schema if isinstance(schema, str) else json.dumps(schema, sort_keys=True)
    return _validator(text).is_valid(value)


@functools.lru_cache(maxsize=256)  # a GRPO group shares one row's schema: checked once, not once per completion
def _validator(schema_text: str):
    import json

    import jsonschema

    schema = json.loads(schema_text)
    kind = jsonschema.validators.validator_for(schema)
    kind.check_schema(schema)  # a broken schema raises, as jsonschema.validate does
    return kind(schema)


def tag_format(tag: str = "answer", content: str = r".+?"):
    """Factory: 1.0 when the whole completion (surrounding whitespace aside) is `<tag>content</tag>`."""
    pattern = re.compile(rf"<{tag}>{content}</{tag}>", re.DOTALL)

    def answer_format(completions, **kwargs) -> list[float]:
        return [float(pattern.fullmatch(completion_text(c).strip()) is not None) for c in completions]

    answer_format.__name__ = f"{tag}_format"
    return answer_format
