"""The learnability check's sampling and scoring (kit.train.learnability) on the kit's tiny random model."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from kit.config.stages import stage_plans
from kit.data import load_rows
from kit.outputs import RunDir
from kit.recipes import load_recipe
from kit.train.learnability import before_grpo, check_learnability, grpo_sampling
from kit.train.stages import StageInputs


@pytest.fixture(scope="module")
def digit_sum(kit_cache):
    recipe = load_recipe("digit_sum")
    cfg = recipe.config({}, {"profile": "smoke"}, gpu=False)
    rewards = recipe.rewards.reweighted(cfg.rewards)
    return SimpleNamespace(recipe=recipe, cfg=cfg, rewards=rewards, rows=load_rows(recipe, cfg.data, rewards))


@pytest.fixture(scope="module")
def random_model(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)


def test_the_random_tiny_model_on_digit_sum_has_nothing_to_learn_from(digit_sum, random_model):
    model, tokenizer = random_model
    report = check_learnability(digit_sum.cfg, digit_sum.recipe, digit_sum.rewards, model, tokenizer, digit_sum.rows)
    assert (report.groups, report.size) == (digit_sum.cfg.grpo.learnability_prompts, digit_sum.cfg.grpo.num_generations)
    assert not report.learns
    assert "score alike on answer_correct: GRPO has nothing to learn from; warm start with SFT" in report.verdict()
    assert report.rewards["answer_correct"].mean == 0.0
    assert 0.0 <= report.cut <= 1.0


def test_the_check_samples_as_grpo_does(digit_sum):
    cfg = digit_sum.cfg.model_copy(update={"grpo": digit_sum.cfg.grpo.model_copy(update={
        "temperature": 0.7, "max_completion_length": 17, "chat_template_kwargs": {"enable_thinking": False},
        "extra": {"top_p": 0.9}})})
    sampling = grpo_sampling(cfg)
    assert (sampling.temperature, sampling.top_p, sampling.max_new_tokens) == (0.7, 0.9, 17)
    assert sampling.chat_template_kwargs == {"enable_thinking": False}
    assert sampling.seed == cfg.seed


def test_it_runs_at_the_first_grpo_stage_writes_run_yaml_and_turns_off(digit_sum, random_model, tmp_path, capsys):
    model, tokenizer = random_model
    out = RunDir(tmp_path)
    out.run_file.write_text("recipe: digit_sum\n")
    cfg = digit_sum.cfg.model_copy(update={"grpo": digit_sum.cfg.grpo.model_copy(update={"learnability_prompts": 2})})

    def inputs(cfg, checkpoint=None):
        return StageInputs(cfg, digit_sum.recipe, digit_sum.rewards, out, digit_sum.rows, model, tokenizer, checkpoint,
                           stage=stage_plans(cfg)[-1])

    report = before_grpo(inputs(cfg))
    section = yaml.safe_load(out.run_file.read_text())["learnability"]
    assert section["groups"] == 2 and section["learns"] is report.learns is False
    assert section["verdict"] == report.verdict()
    assert "training goes on (grpo.learnability_check=false skips the check)" in capsys.readouterr().out
    off = cfg.model_copy(update={"grpo": cfg.grpo.model_copy(update={"learnability_check": False})})
    assert before_grpo(inputs(off)) is None
    assert before_grpo(inputs(cfg, checkpoint=tmp_path / "checkpoint-1")) is None  # a resumed stage has trained
