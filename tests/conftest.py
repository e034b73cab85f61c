"""Shared fixtures: an isolated kit cache and the tiny model, built once per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def kit_cache(tmp_path_factory) -> Path:
    """Every test builds into its own cache, never the user's ~/.cache/grpo-kit."""
    path = tmp_path_factory.mktemp("kit-cache")
    os.environ["KIT_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_model(kit_cache) -> Path:
    from kit.tiny import tiny_model_path

    return tiny_model_path()


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def chat(text: str) -> list[dict]:
    """A completion as TRL hands it over for conversational datasets."""
    return [{"role": "assistant", "content": text}]
