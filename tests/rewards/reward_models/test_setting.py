"""The run's `reward_models` setting: a reward model reward scores with the model the config names for it, the plan
counts that one, an unknown name is one line, and a later run without the setting gets the recipe's model back."""

import pytest

from kit.checks.model_rewards import prepare_model_rewards
from kit.config import RunConfig
from kit.errors import KitError
from kit.plan.reward_models import reward_model_terms
from kit.rewards import RewardBundle, answer_correct, reward_model
from kit.rewards.adaptive import AdaptiveWeight
from kit.rewards.reward_models.tiny import TINY_REWARD, build_tiny_reward_model
from kit.rewards.traits import trait
from tests.conftest import chat

PROMPT = [{"role": "user", "content": "What is 4 plus 7?"}]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_tiny_reward_model(tmp_path_factory.mktemp("rm") / "other-reward", seed=2)


def test_the_setting_swaps_the_model_and_a_run_without_it_gets_the_recipes_back(folder):
    fn = reward_model(TINY_REWARD, name="preference", device="cpu")
    prepare_model_rewards([fn, answer_correct], RunConfig().judge, {"preference": str(folder)})
    assert trait(fn, "source")["model"] == str(folder)
    assert len(fn(prompts=[PROMPT], completions=[chat("11")])) == 1  # scored by the folder's model, loaded now
    assert fn.scorer.loaded is not None and fn.scorer.name == str(folder)
    prepare_model_rewards([fn], RunConfig().judge, {})  # the next run in this process: the recipe's own again
    assert trait(fn, "source")["model"] == TINY_REWARD and fn.scorer.loaded is None


def test_inside_the_kits_wrappers_too(folder):
    fn = reward_model("nobody/never", name="preference", device="cpu")
    prepare_model_rewards([AdaptiveWeight(fn)], RunConfig().judge, {"preference": str(folder)})
    assert trait(fn, "source")["model"] == str(folder)


def test_a_name_that_is_no_reward_model_is_one_line():
    fn = reward_model(TINY_REWARD, name="preference")
    with pytest.raises(KitError, match="^reward_models: 'answer_correct' is not a reward model reward of this "
                                       "recipe; its reward models: preference$"):
        prepare_model_rewards([fn, answer_correct], RunConfig().judge, {"answer_correct": TINY_REWARD})
    with pytest.raises(KitError, match="its reward models: none: no reward here is a kit.rewards.reward_model"):
        prepare_model_rewards([answer_correct], RunConfig().judge, {"x": TINY_REWARD})


def test_a_bad_model_in_the_setting_is_refused_before_anything_loads(tmp_path):
    fn = reward_model(TINY_REWARD, name="preference")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KitError, match="has no config.json"):
        prepare_model_rewards([fn], RunConfig().judge, {"preference": str(tmp_path / "empty")})


def test_the_plan_counts_the_model_the_setting_names(folder):
    fn = reward_model("nobody/never-fetched", name="preference")
    bundle = RewardBundle((fn, 1.0))
    terms, notes = reward_model_terms(bundle, {}, {"preference": TINY_REWARD})
    assert notes == [] and terms[0].name == "reward model weights" and "preference" in terms[0].why


def test_run_yaml_records_a_folder_setting_as_an_absolute_path(folder, monkeypatch):
    """kit eval reads the run's reward_models back from run.yaml, from wherever it is run."""
    from kit.train.record import settings_record

    monkeypatch.chdir(folder.parent)
    cfg = RunConfig(reward_models={"preference": folder.name, "other": TINY_REWARD})
    assert settings_record(cfg, None)["reward_models"] == {"preference": str(folder), "other": TINY_REWARD}


def test_the_empty_completion_trial_loads_no_reward_model(folder):
    """The trial before training calls each rule reward; a reward model is the kit's own, checked by its preflight,
    and loading it there would hold it in a multi-GPU launcher's process for the whole run."""
    from datasets import Dataset

    from kit.checks.empty_completions import try_on_empty_completions

    fn = reward_model(str(folder), name="preference", device="cpu")
    try_on_empty_completions([fn, answer_correct], Dataset.from_list([{"prompt": PROMPT, "answer": "11"}] * 2))
    assert fn.scorer.loaded is None
