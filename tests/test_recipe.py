import sys
import textwrap

import pytest

from kit.errors import KitError
from kit.recipes import known_recipes, load_recipe
from kit.rewards import RewardBundle

USER_RECIPE = textwrap.dedent(
    """
    from datasets import Dataset
    from kit.rewards import RewardBundle

    def shout(completions, **kwargs):
        return [1.0 for _ in completions]

    def prepare(split, source):
        return Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}]}])

    REWARDS = RewardBundle((shout, 1.0))
    DEFAULTS = {"grpo": {"max_steps": 3}}
    """
)


def test_find_by_name():
    recipe = load_recipe("gsm8k")
    assert recipe.name == "gsm8k"
    assert recipe.rewards.names == ["answer_correct", "integer_answer", "strict_format", "soft_format", "xml_count"]
    assert recipe.rewards.weights == [2.0, 0.5, 0.5, 0.5, 0.5]


def test_find_by_file_path(tmp_path):
    path = tmp_path / "my_task.py"
    path.write_text(USER_RECIPE)
    recipe = load_recipe(str(path))
    assert recipe.name == "my_task"
    assert recipe.rewards.names == ["shout"]
    assert recipe.defaults == {"grpo": {"max_steps": 3}}


def test_find_by_dotted_module(tmp_path, monkeypatch):
    package = tmp_path / "userpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text(USER_RECIPE)
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = load_recipe("userpkg.task")
    assert recipe.name == "task"
    assert len(recipe.prepare("train", None)) == 1
    sys.modules.pop("userpkg.task", None)


def test_unknown_name_lists_known():
    with pytest.raises(KitError) as err:
        load_recipe("gsm9k")
    assert "unknown recipe 'gsm9k'" in str(err.value)
    assert "gsm8k" in str(err.value)


def test_missing_file_and_missing_module():
    with pytest.raises(KitError, match="does not exist"):
        load_recipe("./nope/recipe.py")
    with pytest.raises(KitError, match="cannot import recipe module 'nopkg.task'"):
        load_recipe("nopkg.task")


def test_module_without_contract_says_what_is_missing(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def prepare(split, source):\n    return None\n")
    with pytest.raises(KitError, match="lacks REWARDS"):
        load_recipe(str(path))


def test_reweighting_by_name():
    bundle = load_recipe("gsm8k").rewards
    changed = bundle.reweighted({"answer_correct": 3.0, "xml_count": 0})
    assert changed.names == ["answer_correct", "integer_answer", "strict_format", "soft_format"]
    assert changed.weights[0] == 3.0
    assert bundle.weights[0] == 2.0  # the recipe's own bundle is untouched
    with pytest.raises(KitError, match="unknown reward 'corectness'; choose from: answer_correct"):
        bundle.reweighted({"corectness": 1.0})


def test_bundle_rejects_duplicate_names():
    def same(completions, **kwargs):
        return [0.0]

    with pytest.raises(KitError, match="repeated: same"):
        RewardBundle((same, 1.0), (same, 2.0))


def test_columns_needed_reads_signatures():
    assert load_recipe("gsm8k").rewards.columns_needed()["answer_correct"] == ["answer"]


@pytest.mark.parametrize("name", known_recipes())
def test_every_recipe_prepares_its_sample_data(name, tiny_tokenizer):
    """Walk every shipped recipe: it loads, its sample data prepares, and its rewards find their columns."""
    from kit.config import DataConfig
    from kit.data import prepare_dataset

    recipe = load_recipe(name)
    for split in ("train", "test"):
        dataset = prepare_dataset(recipe, DataConfig(path="sample", split=split, max_prompt_length=4096),
                                  tiny_tokenizer)
        assert len(dataset) > 0
