"""Model names the kit understands: hub ids, local folders, `kit:tiny-<spec>` (built on the spot), and
SmolLM2-135M-Instruct (`kit:smollm2`), which resolves without the hub (kit/smollm2.py)."""

from __future__ import annotations

from pathlib import Path

from kit.errors import KitError

TINY_PREFIX = "kit:tiny-"  # kit:tiny-llama, kit:tiny-qwen2, kit:tiny-demo: built on the spot by kit.tiny


def resolve_model_name(name: str) -> str:
    """A hub id or local path as given; `kit:tiny-llama` etc. become the path of a tiny model (built once)."""
    from kit import smollm2

    if smollm2.is_smollm2(name) and not Path(name).expanduser().exists():
        return str(smollm2.smollm2_path())
    if name.startswith(TINY_PREFIX):
        from kit.tiny import SPECS, tiny_model_path

        spec = name.removeprefix(TINY_PREFIX)
        if spec not in SPECS:
            raise KitError(f"unknown built-in model '{name}'; choose from: {', '.join(TINY_PREFIX + s for s in SPECS)}")
        return str(tiny_model_path(spec))
    if name.startswith(("./", "../", "/", "~")) and not Path(name).expanduser().exists():
        raise KitError(f"model path {name} does not exist; give a local model folder or a hub id")
    return str(Path(name).expanduser()) if Path(name).expanduser().exists() else name
