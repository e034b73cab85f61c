"""Pulling answers out of text: tags, GSM8K's `####` line, numbers written the way people write them."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")


def extract_tag(text: str, tag: str) -> str | None:
    """Content of the last complete <tag>...</tag>, stripped; None when there is none."""
    matches = re.findall(rf"<{tag}>(.*?)</{tag}>", text, flags=re.DOTALL)
    return matches[-1].strip() if matches else None


def canonical_number(text: str | None) -> str | None:
    """The last number in `text`, written canonically: '$1,234.50' -> '1234.5', '−7 apples' -> '-7'.

    None when the text holds no number.
    """
    if not text:
        return None
    cleaned = text.replace("\u2212", "-").replace("$", "")
    cleaned = _THOUSANDS.sub("", cleaned)
    numbers = _NUMBER.findall(cleaned)
    if not numbers:
        return None
    try:
        value = Decimal(numbers[-1])
    except InvalidOperation:
        return None
    if value == value.to_integral_value():
        return str(value.quantize(Decimal(1)))
    return format(value.normalize(), "f")


def extract_hash_answer(solution: str) -> str | None:
    """GSM8K's gold answer: the text after '####', as a canonical number when it is one."""
    if "####" not in solution:
        return None
    raw = solution.split("####")[-1].strip()
    return canonical_number(raw) if raw else None
