from pathlib import Path

from kit.config import build_config, deep_merge

MODEL_CONFIGS = Path(__file__).resolve().parents[2] / "bench" / "model_configs"


def config(model_dir: str, **sections):
    """A full-profile run config for one of the bench's model configs, with section overrides."""
    return build_config([deep_merge({"model": {"name": str(MODEL_CONFIGS / model_dir)}}, sections)])
