"""Reward functions with TRL's signature: `fn(completions, **dataset_columns) -> list[float | None]`.

Each returns a score in [0, 1] per completion (the bundle's weight sets its scale), accepts chat-message
and plain-string completions, and never raises on model output. None means "does not apply to this
row"; TRL leaves it out of the mean.
"""

from kit.rewards.answers import canonical_number, extract_hash_answer, extract_tag
from kit.rewards.correctness import answer_correct, integer_answer
from kit.rewards.format import soft_xml_format, strict_xml_format, xml_tag_count
from kit.rewards.text import completion_text

__all__ = [
    "answer_correct", "canonical_number", "completion_text", "extract_hash_answer", "extract_tag",
    "integer_answer", "soft_xml_format", "strict_xml_format", "xml_tag_count",
]
