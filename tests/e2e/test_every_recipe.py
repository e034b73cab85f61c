"""Every shipped recipe, as a user runs it: `make train RECIPE=<name>` finishes its smoke run offline on this
CPU, and `kit eval <name>` scores the merged model and prints its table. gsm8k and digit_sum have runs of
their own (test_train.py, test_demo.py) and are left out here."""

import json

import pytest

from kit.recipes import known_recipes, load_recipe
from tests.e2e.cli import check_run_layout, kit, make

pytestmark = pytest.mark.slow
COVERED_ELSEWHERE = {"gsm8k", "digit_sum",
                     "concise_helpful",  # needs a judge server: test_judge_run.py
                     "helpful_preference"}  # its reward model is on the hub: test_reward_model_run.py


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
    if load_recipe(recipe).toolbox:
        check_tool_template_round_trip(out, trained.stdout, table)


def check_tool_template_round_trip(out, trained: str, table: str) -> None:
    """A tool recipe on the tiny model: the kit's tool template was put in and said, saved with the merged
    model, carried into the GGUF (its `tools` check renders a tool call there), and the eval counts tool use."""
    from transformers import AutoTokenizer

    from kit.tools.template import CHATML_TOOL_TEMPLATE

    assert "using the kit's ChatML tool template" in trained
    assert AutoTokenizer.from_pretrained(out / "merged").chat_template == CHATML_TOOL_TEMPLATE
    exported = kit("export", out / "merged", "--quant", "q8_0", "--out", out / "gguf")
    assert exported.returncode == 0, exported.stdout[-3000:] + exported.stderr[-3000:]
    verdicts = json.loads((out / "gguf" / "verification.json").read_text())
    assert verdicts and all(any(c["name"] == "tools" and c["passed"] for c in v["checks"]) for v in verdicts)
    assert "replies calling a tool" in table and "assistant turns" in table


def load_reward_names(recipe: str) -> list[str]:
    return load_recipe(recipe).rewards.names
