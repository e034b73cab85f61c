"""Where the kit keeps what it builds once: the tiny models, the offline SmolLM2, recipes' sample files."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """~/.cache/grpo-kit, or KIT_CACHE (the tests give every session its own)."""
    return Path(os.environ.get("KIT_CACHE", Path.home() / ".cache" / "grpo-kit"))
