"""Every YAML file under configs/ is a valid config for the recipes it names, as shipped."""

from pathlib import Path

import pytest

from kit.config import read_yaml, resolve_config
from kit.recipes import load_recipe
from tests.conftest import REPO

CONFIGS = sorted((REPO / "configs").glob("*.yaml"))


def test_configs_exist():
    assert len(CONFIGS) >= 2


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_config_is_valid(path: Path):
    text = path.read_text()
    assert text.startswith("#") and "make " in text.splitlines()[1], "a config opens with how to launch it"
    layer = read_yaml(path)
    recipe = load_recipe(layer.get("recipe", path.name.split("_")[0]))
    for gpu in (False, True):
        cfg = resolve_config(recipe.defaults, layer, {}, gpu=gpu)
        assert cfg.profile == layer.get("profile", cfg.profile)
