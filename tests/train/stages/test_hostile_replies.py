"""The red team's replies, through a real `trainer.train()` on the tiny model: a lone surrogate in a tool's name
and in its arguments, JSON nested past Python's recursion limit, a name that is a number, a list or null, and a
flood of calls in one turn. Training finishes, and the tool statistics show the malformed calls.

The tiny model writes none of these by itself, so the step's turns are scripted, a different hostile reply for each
rollout (the turn after the tools' results too: the random model's own ran to the 2,048-token cap, over ten minutes
on one thread); TRL's parser, the kit's template, the tools, the rewards and the update are the real ones.
"""

import json

import pytest

from kit.recipes import load_recipe
from kit.train.prepare import prepare_run
from kit.train.stages.grpo import build_trainer
from tests.train.stages.scripted import script_first_turn

pytestmark = pytest.mark.slow

FLOOD = 12  # past the cap of 4 below; 40, as the red team wrote, overflows the tiny model's context


def call(name: str, arguments: str = "{}") -> str:
    return f'<tool_call>{{"name": {name}, "arguments": {arguments}}}</tool_call>'


# Each a reply a degenerate policy can write; the names and arguments are JSON text as the model writes it.
HOSTILE = {
    "surrogate name": call(r'"\ud800"'),
    "surrogate argument": call('"python"', r'{"code": "print(\"\udfff\")"}'),
    "deep nesting": '<tool_call>{"name": "python", "arguments": {"code": ' + "[" * 1500,
    "number name": call("5"),
    "list name": call('["python"]'),
    "null name": call("null"),
    "string arguments": call('"python"', '"print(1)"'),
    "call flood": "".join(call('"python"', '{"code": "1"}') for _ in range(FLOOD)),
}


def test_hostile_replies_leave_training_running_and_are_counted(tmp_path):
    from kit.models import loader
    from kit.train.run import prepare_tools

    recipe = load_recipe("python_tool")
    batch = 2 * len(HOSTILE)
    cfg = recipe.config({}, {"profile": "smoke", "output_dir": str(tmp_path / "run"), "eval": {"n": 0},
                             "grpo": {"max_steps": 1, "per_device_train_batch_size": batch, "num_generations": 2,
                                      "max_completion_length": 2048, "max_tool_calling_iterations": 1,
                                      "tool_calls_per_turn": 4},
                             "model": {"max_seq_length": 4096},
                             "monitor": {"sample_every": 1, "samples": batch}}, gpu=False)
    run = prepare_run(cfg, recipe)
    run.out.root.mkdir(parents=True)
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    prepare_tools(cfg, recipe, tokenizer)
    script_first_turn(model, tokenizer, list(HOSTILE.values()), every_call=True)
    trainer = build_trainer(cfg, run.stage_args["grpo"], model, tokenizer, run.rows, run.rewards, run.out,
                            recipe.toolbox)
    trainer.train()

    step = next(m for m in map(json.loads, run.out.metrics.read_text().splitlines()) if "reward" in m)
    assert step["tools/unparsed"] > 0  # the calls that could not be run as written were counted
    assert step["tools/over_budget"] > 0  # the flood met the cap of calls per turn
    results = [m["content"] for line in run.out.samples.read_text().splitlines()
               for m in json.loads(line)["completion"] if m["role"] == "tool"]
    assert any("budget" in r for r in results)
    assert len(results) <= batch * (4 + 1)  # the flood was cut at the cap: 4 calls and one error, not 12
