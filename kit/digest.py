"""Fingerprints the kit records so a later command can tell whether it sees the same inputs: a file's sha256
(the recipe and data a run trained with, in run.yaml) and a prompt's key (which rows a run held out)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def prompt_key(prompt) -> str:
    """A short, stable key for one prompt (a list of chat messages): the same messages give the same key."""
    text = json.dumps(prompt, sort_keys=True, ensure_ascii=True)  # ascii: lone surrogates encode too
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def picture_digest(picture) -> str:
    """A picture's key: the sha256 of its pixels (a PIL image), whatever file format it came in."""
    return hashlib.sha256(picture.tobytes() if hasattr(picture, "tobytes") else str(picture).encode()).hexdigest()


def shown_keys(rows) -> list[str]:
    """Each row's key by what the model is shown: its prompt, and its pictures where it has an `image` or `images`
    column (a vision task asks one question of many pictures, so its prompts alone would call them all one row)."""
    column = next((c for c in ("image", "images") if c in rows.column_names), None)
    if column is None:
        return [prompt_key(p) for p in rows["prompt"]]
    pictures = [v if isinstance(v, list) else [] if v is None else [v] for v in rows[column]]
    return [prompt_key([*p, {"pictures": [picture_digest(x) for x in shown]}])
            for p, shown in zip(rows["prompt"], pictures)]
