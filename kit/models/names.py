"""Model names the kit understands: hub ids, local folders, `kit:tiny-<spec>` (built on the spot), and
SmolLM2-135M-Instruct (`kit:smollm2`), which resolves without the hub (kit/models/smollm2.py)."""

from __future__ import annotations

from pathlib import Path

from kit.config import TINY_PREFIX
from kit.errors import KitError

_PREQUANTIZED_SUFFIXES = ("-unsloth-bnb-4bit", "-bnb-4bit")


def resolve_model_name(name: str) -> str:
    """A hub id or local path as given; `kit:tiny-llama` etc. become the path of a tiny model (built once)."""
    from kit.models import smollm2

    if smollm2.is_smollm2(name) and not Path(name).expanduser().exists():
        return str(smollm2.smollm2_path())
    if name.startswith(TINY_PREFIX):
        from kit.models.tiny import SPECS, tiny_model_path

        spec = name.removeprefix(TINY_PREFIX)
        if spec == "vision":
            from kit.models.tiny_vision import tiny_vision_path

            return str(tiny_vision_path())
        if spec not in SPECS:
            choices = ", ".join(TINY_PREFIX + s for s in [*SPECS, "vision"])
            raise KitError(f"unknown built-in model '{name}'; choose from: {choices}")
        return str(tiny_model_path(spec))
    if name.startswith(("./", "../", "/", "~")) and not Path(name).expanduser().exists():
        raise KitError(f"model path {name} does not exist; give a local model folder or a hub id")
    path = Path(name).expanduser()
    return str(require_model_folder(path)) if path.exists() else name


def require_model_folder(path: Path) -> Path:
    """A local model must be a folder with config.json; transformers' own error for an empty one blames
    a missing `model_type` key, and only after the run has begun writing."""
    if not path.is_dir():
        raise KitError(f"model path {path} is a file; give the model's folder (the one holding config.json)")
    if not (path / "config.json").is_file():
        held = sorted(p.name for p in path.iterdir())
        what = f"holds only {', '.join(held[:5])}" if held else "is empty"
        raise KitError(f"model folder {path} {what}, no config.json; give a folder written by save_pretrained "
                       "(e.g. OUT/merged of a run) or a hub id")
    return path


def base_16bit_name(name: str) -> str:
    """Unsloth's pre-quantized repos ('...-bnb-4bit') are 4-bit copies of a 16-bit repo without the suffix."""
    for suffix in _PREQUANTIZED_SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name
