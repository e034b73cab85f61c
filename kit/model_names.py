"""Model names the kit understands: hub ids, local folders, and `kit:tiny-llama` (built on the spot)."""

from __future__ import annotations

from pathlib import Path

from kit.config import TINY_MODEL
from kit.errors import KitError


def resolve_model_name(name: str) -> str:
    """A hub id or local path as given; `kit:tiny-llama` becomes the path of the tiny model (built once)."""
    if name == TINY_MODEL:
        from kit.tiny import tiny_model_path

        return str(tiny_model_path())
    if name.startswith(("./", "../", "/", "~")) and not Path(name).expanduser().exists():
        raise KitError(f"model path {name} does not exist; give a local model folder or a hub id")
    return str(Path(name).expanduser()) if Path(name).expanduser().exists() else name
