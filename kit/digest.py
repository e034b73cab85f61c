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
