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

    None when the text holds no number. It reads '18 or 20' as 20: to judge an answer, use
    kit.rewards.whole_answer.same_answer, which requires the whole text to be one value.
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


_FRACTION = re.compile(r"^(-?\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)$")
_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")
_ANSWER_IS = re.compile(r"(?:final answer|answer)\s*(?:is|:|=)\s*(.+)", re.IGNORECASE)


def extract_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...}, braces balanced; None when there is none."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed")
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1 : j].strip()
    return None


def final_answer(text: str, tag: str = "answer") -> str:
    """The part of a completion that states the answer: <answer> tag, else \\boxed{}, else
    'the answer is ...', else the whole text."""
    for found in (extract_tag(text, tag), extract_boxed(text)):
        if found is not None:
            return found
    match = _ANSWER_IS.search(text)
    return match.group(1).strip().rstrip(".") if match else text.strip()


def parse_number(text: str | None) -> float | None:
    """A number as people write it: '1,234', '$5.00', '12%', '3/4', '1.5e3', '−7'; the last one in the text
    (the rewards judge with kit.rewards.whole_answer.answer_values instead, where '12%' is 0.12 or 12)."""
    if not text:
        return None
    cleaned = text.strip().replace("\u2212", "-").replace("$", "").replace("%", "").rstrip(".")
    cleaned = _THOUSANDS.sub("", cleaned)
    fraction = _FRACTION.match(cleaned)
    if fraction:
        denominator = float(fraction.group(2))
        return float(fraction.group(1)) / denominator if denominator else None
    scientific = _SCIENTIFIC.findall(cleaned)
    if scientific:
        return float(scientific[-1])
    number = canonical_number(cleaned)
    return float(number) if number is not None else None
