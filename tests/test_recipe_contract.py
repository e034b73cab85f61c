"""The recipe contract: what kit/recipe.py reads from a recipe module, typo-proof and typed."""

import ast
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import kit.recipe
from kit.checks.rewards_check import load_samples, print_report, run_bundle
from kit.config import RunConfig
from kit.errors import KitError
from kit.recipe import ATTRIBUTES, Recipe, recipe_from_module
from kit.recipes import known_recipes, load_recipe
from kit.rewards import RewardBundle

BASE = """
from kit.recipe import Scoring
from kit.rewards import RewardBundle

def shout(completions, **kwargs):
    return [1.0 for _ in completions]

def prepare(split, source):
    return None

REWARDS = RewardBundle((shout, 1.0))
"""


def module_of(source: str, base: str = BASE) -> ModuleType:
    module = ModuleType("x")
    exec(textwrap.dedent(base) + textwrap.dedent(source), module.__dict__)  # noqa: S102 - as importing it would
    return module


@pytest.mark.parametrize("source, wrong, right", [
    ("DEFAULT = {'grpo': {'max_steps': 3}}", "DEFAULT", "DEFAULTS"),
    ("SYSTEM_PROMT = 'Answer briefly.'", "SYSTEM_PROMT", "SYSTEM_PROMPT"),
    ("def sft_targets(row):\n    return ''", "sft_targets", "sft_target"),
    ("Eval = Scoring(strict=shout, lenient=shout)", "Eval", "EVAL"),
    ("def write_samples(path, split):\n    pass", "write_samples", "write_sample"),
    ("SAMPLE_COMPLETION = [{'completion': 'a'}]", "SAMPLE_COMPLETION", "SAMPLE_COMPLETIONS"),
    ("name = 'mine'", "name", "NAME"),
])
def test_a_misspelled_attribute_names_the_right_one(source, wrong, right):
    with pytest.raises(KitError) as err:
        recipe_from_module(module_of(source), "x")
    message = str(err.value)
    assert message.startswith(f"recipe 'x': {wrong} is not something the kit reads; did you mean {right}?")
    assert "may define DEFAULTS, write_sample, SAMPLE_COMPLETIONS, EVAL, SYSTEM_PROMPT, sft_target, NAME" in message


def test_a_misspelled_required_attribute_is_named_before_it_is_missed():
    source = "def prepare(split, source):\n    return None\nREWARD = RewardBundle((shout, 1.0))\n"
    base = "from kit.rewards import RewardBundle\ndef shout(completions, **kwargs):\n    return [1.0]\n"
    with pytest.raises(KitError, match="REWARD is not something the kit reads; did you mean REWARDS\\?"):
        recipe_from_module(module_of(source, base), "x")


def test_every_misspelling_is_reported_at_once():
    with pytest.raises(KitError) as err:
        recipe_from_module(module_of("DEFAULT = {}\nSYSTEM_PROMT = 'hi'\n"), "x")
    assert "DEFAULT is not" in str(err.value) and "SYSTEM_PROMT is not" in str(err.value)


def test_a_recipes_own_names_are_its_own():
    """Helpers and constants a recipe keeps for itself: far from every name the kit reads, of another kind
    than the one they resemble (NAMES is a list, NAME a string), or beside the real attribute."""
    source = """
        HUB_ID, HUB_CONFIG = "openai/gsm8k", "main"
        PROMPT_TEMPLATE = "Q: {question}"
        DEFAULT_LR = 1e-5
        NAMES = ["Ava", "Ben"]
        SAMPLES = 64

        def extract_answer(text):
            return text

        def prepare_rows(rows):
            return rows

        def write_rows(path, rows):
            pass

        def sft_target(row):
            return ""

        def sft_targets(rows):
            return [sft_target(r) for r in rows]

        from kit.rewards import Reward  # a class whose name is close to REWARDS, which is defined
    """
    recipe = recipe_from_module(module_of(source), "x")
    assert recipe.name == "x" and recipe.rewards.names == ["shout"]


def test_the_right_spelling_in_another_case_is_still_refused_when_the_real_one_is_absent():
    with pytest.raises(KitError, match="Defaults is not something the kit reads; did you mean DEFAULTS"):
        recipe_from_module(module_of("Defaults = {}"), "x")


@pytest.mark.parametrize("source, message", [
    ("DEFAULTS = [('grpo', {})]", "DEFAULTS must be a dict shaped like the YAML config"),
    ("SAMPLE_COMPLETIONS = 'right, wrong'", "SAMPLE_COMPLETIONS must be a list of dicts"),
    ("SAMPLE_COMPLETIONS = [{'text': 'a'}]", "SAMPLE_COMPLETIONS must be a list of dicts, each {\"completion\""),
    ("EVAL = {'strict': None}", "EVAL must be a kit.recipe.Scoring"),
    ("sft_target = '<answer>'", "sft_target must be a function sft_target\\(row\\) -> str, not str"),
    ("write_sample = 'data.jsonl'", "write_sample must be a function write_sample\\(path, split\\)"),
    ("prepare = 'gsm8k'", "prepare must be a function prepare\\(split, source\\)"),
    ("SYSTEM_PROMPT = ['Answer briefly.']", "SYSTEM_PROMPT must be a string, not list"),
    ("NAME = 3", "NAME must be a string, not int"),
    ("FACT_COLUMNS = ('prompt')", "FACT_COLUMNS must be a tuple of column names, e.g. \\(\"prompt\",\\), not str"),
    ("REWARDS = [(shout, 1.0)]", "REWARDS must be a RewardBundle"),
])
def test_a_wrong_kind_is_refused(source, message):
    with pytest.raises(KitError, match=f"recipe 'x': {message}"):
        recipe_from_module(module_of(source), "x")


def test_every_wrong_kind_is_reported_at_once():
    with pytest.raises(KitError) as err:
        recipe_from_module(module_of("DEFAULTS = []\nNAME = 3\n"), "x")
    assert "DEFAULTS must be a dict" in str(err.value) and "NAME must be a string" in str(err.value)


def test_the_right_kinds_are_taken():
    source = """
        DEFAULTS = {"grpo": {"max_steps": 3}}
        SAMPLE_COMPLETIONS = [{"label": "good", "completion": "yes"}]
        EVAL = Scoring(strict=shout, lenient=shout)
        SYSTEM_PROMPT = "Answer briefly."
        NAME = "mine"

        def sft_target(row):
            return "yes"

        def write_sample(path, split):
            pass
    """
    recipe = recipe_from_module(module_of(source), "x")
    assert recipe.name == "mine" and recipe.defaults == {"grpo": {"max_steps": 3}}
    assert recipe.system_prompt == "Answer briefly." and recipe.scoring.verdict("", {}).strict


def test_the_module_docstring_names_every_attribute_the_kit_reads():
    for attr in ATTRIBUTES:
        assert f"\n    {attr}" in kit.recipe.__doc__, f"kit/recipe.py's docstring does not describe {attr}"


def test_there_are_shipped_recipes():
    assert {"gsm8k", "digit_sum", "addition"} <= set(known_recipes())


@pytest.mark.parametrize("name", known_recipes())
def test_every_shipped_recipe_loads(name):
    recipe = load_recipe(name)
    assert isinstance(recipe, Recipe) and recipe.name == name and recipe.rewards.names


def test_recipes_import_the_bundle_from_kit_rewards():
    assert type(load_recipe("gsm8k").rewards) is RewardBundle


def test_the_rewards_check_takes_a_bundle_and_samples_not_a_recipe(capsys):
    def says_yes(completions, **kwargs):  # a text sample arrives as training passes it: a chat message
        return [float(c == [{"role": "assistant", "content": "yes"}]) for c in completions]

    samples = load_samples(None, [{"label": "good", "completion": "yes"}, {"label": "bad", "completion": "no"}], "t")
    runs = run_bundle(RewardBundle((says_yes, 2.0)), samples)
    print_report(runs, samples)
    assert runs[0].values == [1.0, 0.0] and "no warnings" in capsys.readouterr().out
    with pytest.raises(KitError, match="recipe 't' ships no SAMPLE_COMPLETIONS; pass --completions FILE.jsonl"):
        load_samples(None, [], "t")


def test_the_reward_library_imports_no_recipe():
    """kit.recipe builds on kit.rewards; an import back (even under TYPE_CHECKING) would make them a cycle. The checks
    that need a recipe live in kit/checks/, above both."""
    for path in (Path(kit.recipe.__file__).parent / "rewards").rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not any(name.startswith("kit.recipe") for name in imported), (path.name, imported)


def restated_defaults(defaults: dict, kit_defaults: dict, prefix: str = "") -> list[str]:
    """The settings in a recipe's DEFAULTS that only repeat the kit's own default."""
    found = []
    for key, value in defaults.items():
        if isinstance(value, dict) and isinstance(kit_defaults.get(key), dict):
            found += restated_defaults(value, kit_defaults[key], f"{prefix}{key}.")
        elif key in kit_defaults and kit_defaults[key] == value:
            found.append(f"{prefix}{key}")
    return found


@pytest.mark.parametrize("name", known_recipes())
def test_a_shipped_recipes_defaults_say_only_what_differs_from_the_kits(name):
    """The kit's defaults live in one place (kit/config/schema.py); a recipe restating one would hide a change there."""
    kit_defaults = RunConfig().model_dump(mode="json")
    assert restated_defaults(load_recipe(name).defaults, kit_defaults) == []


def test_a_restated_default_is_seen():
    restating = {"grpo": {"learning_rate": 5e-6, "max_steps": 250}}
    assert restated_defaults(restating, RunConfig().model_dump(mode="json")) == ["grpo.learning_rate"]
