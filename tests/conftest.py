"""Shared fixtures: an isolated kit cache and the tiny model, built once per test session."""

from __future__ import annotations

import os
import textwrap
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
    from kit.models.tiny import tiny_model_path

    return tiny_model_path()


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def chat(text: str) -> list[dict]:
    """A completion as TRL hands it over for conversational datasets."""
    return [{"role": "assistant", "content": text}]


# A user recipe written as a file: its reward varies between completions (so GRPO's gradients are
# non-zero) and it ships no sample data and no sft_target.
COUNT_RECIPE = textwrap.dedent(
    """
    from datasets import Dataset
    from kit.rewards import RewardBundle

    def digits(completions, **kwargs):
        return [sum(ch.isdigit() for ch in c[-1]["content"]) / 10 for c in completions]

    def prepare(split, source):
        return Dataset.from_list([{"prompt": [{"role": "user", "content": f"Count to {i}"}]} for i in range(32)])

    REWARDS = RewardBundle((digits, 1.0))
    """
)
