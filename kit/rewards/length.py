"""Length rewards, as factories. Length is counted in tokens when a tokenizer is given, else in words."""

from __future__ import annotations

from kit.rewards.text import completion_text


def _counter(tokenizer):
    if tokenizer is None:
        return lambda text: len(text.split())
    return lambda text: len(tokenizer(text, add_special_tokens=False).input_ids)


def ideal_length(target: int, tokenizer=None):
    """1.0 at exactly `target` units, falling linearly to 0 at 0 and at 2 x target."""
    count = _counter(tokenizer)

    def length_near_target(completions, **kwargs) -> list[float]:
        return [max(0.0, 1.0 - abs(count(completion_text(c)) - target) / target) for c in completions]

    return length_near_target


def min_length(minimum: int, tokenizer=None):
    """Partial credit up to `minimum` units: length / minimum, capped at 1."""
    count = _counter(tokenizer)

    def long_enough(completions, **kwargs) -> list[float]:
        return [min(1.0, count(completion_text(c)) / minimum) for c in completions]

    return long_enough


def max_length_penalty(maximum: int, tokenizer=None):
    """1.0 up to `maximum` units, then falling linearly to 0 at 2 x maximum."""
    count = _counter(tokenizer)

    def short_enough(completions, **kwargs) -> list[float]:
        return [max(0.0, min(1.0, 2.0 - count(completion_text(c)) / maximum)) for c in completions]

    return short_enough
