"""`stages` entries with settings of their own: the guide's curriculum (format first, then correctness)."""

import pytest

from kit.config import build_config
from kit.config.stages import stage_plans
from kit.errors import KitError

GUIDE = ["sft", {"grpo": {"name": "format", "rewards": {"correctness_reward": 0}, "max_steps": 50}}, "grpo"]


def test_each_stage_has_its_name_its_steps_and_its_reward_weights():
    cfg = build_config([{"stages": GUIDE, "grpo": {"max_steps": 7, "learning_rate": 1e-5}}])
    plans = stage_plans(cfg)
    assert [(p.kind, p.name) for p in plans] == [("sft", "sft"), ("grpo", "format"), ("grpo", "grpo-2")]
    assert [p.cfg.grpo.max_steps for p in plans[1:]] == [50, 7]  # the entry's own, else the section's
    assert all(p.cfg.grpo.learning_rate == 1e-5 for p in plans[1:])
    assert plans[1].rewards == {"correctness_reward": 0} and plans[2].rewards == {}
    assert [p.checkpoint_folder for p in plans[1:]] == ["format", "grpo-2"]  # OUT/checkpoints/<name>


def test_a_run_with_one_grpo_stage_keeps_its_names_and_its_checkpoint_folder():
    plans = stage_plans(build_config([{"stages": ["sft", "grpo"]}]))
    assert [p.name for p in plans] == ["sft", "grpo"] and plans[1].checkpoint_folder is None


def test_a_repeated_kind_is_numbered():
    assert [p.name for p in stage_plans(build_config([{"stages": ["grpo", "grpo"]}]))] == ["grpo-1", "grpo-2"]


@pytest.mark.parametrize("stages, said", [
    ([{"grpo": {"num_generations": 4}}], "num_generations sets the memory plan, which is made once for the run"),
    ([{"grpo": {"max_step": 3}}], "max_step is not a grpo setting; did you mean max_steps?"),
    ([{"sft": {"rewards": {"a": 1}}}], "rewards weigh GRPO's rewards; an sft stage has none"),
    ([{"grpo": {"name": "a/b"}}], "name 'a/b' must be letters, digits"),
    ([{"grpo": {"name": "x"}}, {"grpo": {"name": "x"}}], "the name x is used twice"),
    ([{"grpo": {"learning_rate": -1}}], r"stages\[0\]: learning_rate: Input should be greater than 0"),
    ([{"grpo": {"loss_type": "cispo", "epsilon_high": 0.5}}], r"stages\[0\]: grpo.loss_type cispo caps"),
    ([{"grpo": {}, "sft": {}}], "a stage mapping has one key, its kind"),
    (["dpo"], "stages: unknown stage 'dpo'; a stage is sft or grpo"),
])
def test_an_entry_that_cannot_run_is_refused_in_one_sentence(stages, said):
    with pytest.raises(KitError, match=said):
        build_config([{"stages": stages}])
