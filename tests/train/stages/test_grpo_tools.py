"""TRL's own tool loop, run by the kit's GRPO stage on the tiny model: the recipe's tools reach the trainer, their
results join the completions, an environment's get_reward() is a reward, and the kit's tool metrics are logged.

The tiny model never writes a tool call by itself, so its first turn of each step is scripted (a call of the
recipe's tool); every later turn, the tools, the rewards and the update are the real ones.
"""

import json

import pytest

from kit.recipes import load_recipe
from kit.train.prepare import prepare_run
from kit.train.stages.grpo import build_trainer
from tests.train.stages.scripted import script_first_turn

pytestmark = pytest.mark.slow

FIRST_TURNS = {
    "python_tool": '<tool_call>{"name": "python", "arguments": {"code": "347 * 862"}}</tool_call>',
    "guess_number": '<tool_call>{"name": "guess", "arguments": {"number": 25}}</tool_call>',
}


@pytest.mark.parametrize("recipe_name", ["python_tool", "guess_number"])
def test_the_recipes_tools_run_inside_trls_loop(recipe_name, tmp_path):
    from kit.models import loader
    from kit.train.run import prepare_tools

    recipe = load_recipe(recipe_name)
    cfg = recipe.config({}, {"profile": "smoke", "output_dir": str(tmp_path / "run"), "eval": {"n": 0},
                             "grpo": {"max_steps": 1}, "monitor": {"sample_every": 1}}, gpu=False)
    run = prepare_run(cfg, recipe)
    run.out.root.mkdir(parents=True)
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    prepare_tools(cfg, recipe, tokenizer)
    script_first_turn(model, tokenizer, [FIRST_TURNS[recipe_name]])
    trainer = build_trainer(cfg, run.stage_args["grpo"], model, tokenizer, run.rows, run.rewards, run.out,
                            recipe.toolbox)
    trainer.train()

    metrics = [json.loads(line) for line in run.out.metrics.read_text().splitlines()]
    step = next(m for m in metrics if "reward" in m)
    assert step["tools/call_frequency"] > 0 and step["tools/calling"] == 1.0 and step["tools/turns"] >= 2
    sample = json.loads(run.out.samples.read_text().splitlines()[0])
    tool_results = [m["content"] for m in sample["completion"] if m["role"] == "tool"]  # the whole transcript
    if recipe_name == "python_tool":
        assert tool_results[0] == "299114"  # the model's code ran in the sandbox
    else:
        assert tool_results[0] in {"higher", "lower", "correct: it is 25"}
        assert "rewards/HiddenNumber/mean" in step  # the environment's get_reward, added by TRL
