"""Every shipped recipe, as a user runs it: `make train RECIPE=<name>` finishes its smoke run offline on this
CPU, and `kit eval <name>` scores the merged model and prints its table. gsm8k and digit_sum have runs of
their own (test_train.py, test_demo.py) and are left out here."""

import json

import pytest

from kit.recipes import known_recipes
from tests.e2e.cli import check_run_layout, kit, make

pytestmark = pytest.mark.slow
COVERED_ELSEWHERE = {"gsm8k", "digit_sum"}


@pytest.mark.parametrize("recipe", [r for r in known_recipes() if r not in COVERED_ELSEWHERE])
def test_smoke_run_then_kit_eval(recipe, tmp_path):
    out = tmp_path / "run"
    trained = make("train", f"RECIPE={recipe}", "PROFILE=smoke", f"OUT={out}")
    assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr[-3000:]
    assert "SMOKE PROFILE" in trained.stdout
    check_run_layout(out, steps=2, reward=load_reward_names(recipe)[0])
    results = json.loads((out / "eval.json").read_text())["results"]
    assert [r["name"] for r in results] == ["before", "after"], results

    evaluated = kit("eval", recipe, "--model", out / "merged", "--n", "4")
    assert evaluated.returncode == 0, evaluated.stdout[-3000:] + evaluated.stderr[-3000:]
    table = evaluated.stdout
    assert "n = 4" in table and "strict accuracy" in table and "lenient accuracy" in table, table[-2000:]
    for reward in load_reward_names(recipe):
        assert f"reward {reward}" in table, (reward, table[-2000:])


def load_reward_names(recipe: str) -> list[str]:
    from kit.recipes import load_recipe

    return load_recipe(recipe).rewards.names
