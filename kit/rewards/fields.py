"""Field-level correctness for JSON answers: the share of the gold object's fields the reply got right.

    field_accuracy(completions, answer)   the reward; `answer` holds the gold object as JSON text
    json_reply(text)                      the reply's JSON: a fenced block's body, else the whole reply
    first_json_object(text)               the first JSON object anywhere in a text (lenient scoring)
    field_score(given, gold)              the fraction of gold fields `given` matches

A field is a leaf of the gold object, reached through keys and list positions (`venue.city`,
`items[1].price`); a list is compared position by position. Numbers compare numerically (12 == 12.0 ==
"12"), strings after normalising (case, punctuation and runs of whitespace ignored: "New York" == "new
york."), booleans exactly, and a null gold field is matched by null or by leaving the field out.
"""

from __future__ import annotations

import json
import math
import string

from kit.rewards.answers import parse_number
from kit.rewards.format import fenced_code
from kit.rewards.text import completion_text

_MISSING = object()  # a path the reply does not have
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def json_reply(text: str) -> dict | list | None:
    """The object or array a reply gives, read as json_format reads it: the first fenced block's body
    (```json ... ```), else the whole reply. None when that is not JSON, or is a bare string or number."""
    body = fenced_code(text) or text
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None


def first_json_object(text: str) -> dict | None:
    """The first `{...}` in the text that parses as a JSON object, wherever it stands; None if there is none."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start >= 0:
        try:
            return decoder.raw_decode(text, start)[0]  # JSON that opens with "{" is an object
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
    return None


def leaves(value, path: tuple = ()):
    """(path, value) for each leaf: a scalar, or an empty object or list."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def value_at(value, path: tuple):
    """The value at `path` in `value`, or _MISSING where a key or position is absent."""
    for step in path:
        if isinstance(step, str) and isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(step, int) and isinstance(value, list) and step < len(value):
            value = value[step]
        else:
            return _MISSING
    return value


def normalise_text(text: str) -> str:
    return " ".join(text.lower().translate(_PUNCTUATION).split())


def _number(value) -> float | None:
    if isinstance(value, bool):  # True is an int to Python, not a number to JSON
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return parse_number(value) if isinstance(value, str) else None


def same_value(given, gold) -> bool:
    """One field: does the reply's value match the gold one (see the module docstring for the rules)?"""
    if gold is None:
        return given is None or given is _MISSING
    if isinstance(gold, bool) or isinstance(given, bool):
        return given is gold
    if isinstance(gold, (int, float)):
        number = _number(given)
        return number is not None and math.isclose(number, gold, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(gold, str):
        if isinstance(given, (int, float)):
            given = str(given)
        return isinstance(given, str) and normalise_text(given) == normalise_text(gold)
    return given == gold  # an empty object or list


def field_score(given, gold) -> float:
    """Fraction of gold fields `given` matches (an empty gold object is one field: `given` must be empty too)."""
    fields = list(leaves(gold))
    return sum(same_value(value_at(given, path), value) for path, value in fields) / len(fields)


def gold_object(answer):
    """The gold value from an `answer` cell (JSON text, or already parsed); None when there is none."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return None
    if not isinstance(answer, str):
        return answer
    try:
        return json.loads(answer)
    except (ValueError, RecursionError):
        return None


def field_accuracy(completions, answer, **kwargs) -> list[float | None]:
    """The fraction of the gold object's fields the reply's JSON gets right (0 when the reply is not JSON).

    None for a row without a gold object. The reply is read as json_format reads it, so text around a bare
    object scores 0 here too; weigh json_format beside it for the schema.
    """
    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        expected = gold_object(gold)
        if expected is None:
            scores.append(None)
            continue
        given = json_reply(completion_text(completion))
        scores.append(0.0 if given is None else field_score(given, expected))
    return scores
