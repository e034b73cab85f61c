"""The reward-hacking alarm through a real `trainer.train()` on the tiny model: TRL's own record of each batch
(prompts, completions, rewards, advantages) reaches kit.monitor.gaming, and a policy that answers every prompt
of the gameable recipe with one string is said by name in the console and in diagnostics.jsonl.

The tiny model writes no such thing by itself, so every generation is scripted; the trainer, the rewards,
the advantages and the health callback are the real ones.
"""

import json

import pytest

from kit.monitor.gaming import watch_for_gaming
from kit.recipes import load_recipe
from kit.train.prepare import prepare_run
from kit.train.stages.grpo import build_trainer
from tests.train.stages.scripted import script_first_turn

pytestmark = pytest.mark.slow


def test_one_answer_for_every_prompt_is_said_while_training(tmp_path, capsys):
    from kit.models import loader

    recipe = load_recipe("tests.monitor.gameable")
    cfg = recipe.config({}, {"profile": "smoke", "output_dir": str(tmp_path / "run"), "eval": {"n": 0},
                             "grpo": {"max_steps": 4, "per_device_train_batch_size": 16, "num_generations": 2,
                                      "max_completion_length": 16},
                             "monitor": {"samples": 0}}, gpu=False)
    run = prepare_run(cfg, recipe)
    run.out.root.mkdir(parents=True)
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    # one reply per rollout: the pair the gameable reward pays for the first prompt, then the same for all
    script_first_turn(model, tokenizer, ["<answer>481+263</answer>"], every_call=True)
    trainer = build_trainer(cfg, run.stage_args["grpo"], model, tokenizer, run.rows, run.rewards, run.out)
    watch_for_gaming(trainer, recipe, run.rewards)
    trainer.train()

    recorded = [json.loads(line) for line in run.out.diagnostics.read_text().splitlines()]
    collapsed = [d for d in recorded if d["code"] == "collapsed"]
    assert [d["step"] for d in collapsed] == [3]  # three logged steps running, said once
    assert "in 8 of 8 groups every completion is the same string, '<answer>481+263</answer>'" \
        in collapsed[0]["message"]
    assert "health (step 3): in 8 of 8 groups" in capsys.readouterr().out
