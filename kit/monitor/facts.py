"""The prompt's facts (numbers and names) and whether a completion mentions any: kit.monitor.gaming's
`facts_dropped` sign, which asks whether what GRPO reinforces still uses the question."""

from __future__ import annotations

import re

from kit.errors import KitError

NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]{2,}")  # a capitalised word that does not start a sentence


def fact_columns(recipe, dataset) -> tuple[str, ...]:
    """The recipe's FACT_COLUMNS, each checked against the rows it trains on."""
    columns = tuple(recipe.fact_columns)
    missing = [c for c in columns if dataset is not None and c not in dataset.column_names]
    if missing:
        raise KitError(f"recipe {recipe.name}'s FACT_COLUMNS names {', '.join(missing)}, which its prepared rows "
                       f"lack (they have {', '.join(dataset.column_names)}): name columns prepare() returns")
    return columns


def row_facts(row: dict, columns: tuple[str, ...]) -> set[str]:
    """The numbers and names in a row's fact columns (a chat prompt: its user turns)."""
    text = " ".join(column_text(row.get(c)) for c in columns)
    return {n.replace(",", "") for n in NUMBER.findall(text)} | set(NAME.findall(text))


def column_text(value) -> str:  # a chat prompt: what the user said, not the system prompt's instructions
    if isinstance(value, list):
        return " ".join(str(m.get("content") or "") for m in value if isinstance(m, dict) and m.get("role") == "user")
    return "" if value is None else str(value)


def mentions(text: str, facts: set[str]) -> bool:
    words = {n.replace(",", "") for n in NUMBER.findall(text)} | set(re.findall(r"[A-Za-z]+", text))
    return not facts.isdisjoint(words)
