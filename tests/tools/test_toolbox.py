"""A recipe's tools: checked at load with one clear message, called by TRL's rules, environments reset per rollout."""

import types

import pytest

from kit.errors import KitError
from kit.recipe import recipe_from_module
from kit.recipes.guess_number import HiddenNumber, sft_target
from kit.rewards import RewardBundle
from kit.tools.budget import ToolBudget
from kit.tools.toolbox import Toolbox


def multiply(a: int, b: int) -> int:
    """Multiply two numbers.

    Args:
        a: the first number
        b: the second number
    """
    return a * b


def divide(a: int, b: int) -> float:
    """Divide a by b.

    Args:
        a: the dividend
        b: the divisor
    """
    if b == 0:
        raise ValueError("cannot divide by zero")
    return a / b


def call(name: str, **arguments) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_tool_call_is_answered_with_its_result():
    episode = Toolbox((multiply,)).episode({})
    assert episode.call([call("multiply", a=3, b=4)]) == [{"role": "tool", "name": "multiply", "content": "12"}]


def test_a_tool_that_raises_or_does_not_exist_is_a_result_the_model_reads():
    episode = Toolbox((multiply, divide)).episode({})
    results = episode.call([call("divide", a=1, b=0), call("nope"), call("multiply", a=1)])
    assert [r["content"] for r in results[:2]] == ["{'error': 'cannot divide by zero'}",
                                                   "{'error': 'Tool nope not found.'}"]
    assert results[2]["content"].startswith("{'error': ") and "missing 1 required positional argument" in \
        results[2]["content"]


def test_a_tool_without_a_docstring_is_refused_at_recipe_load():
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(KitError, match="tool 'add' cannot be shown to the model.*Args: line"):
        Toolbox((add,), source="mine").check()


class NoReset:
    def move(self, to: str) -> str:
        """Move.

        Args:
            to: where
        """
        return to


class OnlyReset:
    def reset(self, **row):
        return None


@pytest.mark.parametrize("environment, message", [
    (NoReset, "has no reset"), (OnlyReset, "has no public methods besides reset"), (HiddenNumber(), "must be a class")])
def test_an_environment_trl_would_refuse_is_refused_at_recipe_load(environment, message):
    with pytest.raises(KitError, match=message):
        Toolbox(environment=environment, source="mine").check()


def test_each_episode_gets_a_fresh_environment_reset_with_its_row():
    box = Toolbox(environment=HiddenNumber)
    first, second = box.episode({"secret": 7, "prompt": []}), box.episode({"secret": 9, "prompt": []})
    assert first.environment is not second.environment and list(first.tools) == ["guess"]
    assert first.call([call("guess", number=7)])[0]["content"] == "correct: it is 7"
    assert second.environment.guesses == 0 and not second.environment.solved


def test_replaying_a_transcript_gives_the_environment_its_state():
    game = Toolbox(environment=HiddenNumber).replay({"secret": 37}, sft_target({"secret": 37}))
    assert game.solved and game.guesses == 6 and game.get_reward() == 1.0


def test_a_recipe_with_both_tools_and_an_environment_is_refused():
    module = types.ModuleType("mine")
    module.prepare = lambda split, source: None
    module.REWARDS = RewardBundle((lambda completions, **kw: [0.0] * len(completions), 1.0))
    module.TOOLS, module.ENVIRONMENT = [multiply], HiddenNumber
    with pytest.raises(KitError, match="defines both TOOLS and ENVIRONMENT"):
        recipe_from_module(module, "mine")


class Counter:
    """A recipe environment whose reset forgets to clear a field: state that must not cross rollouts."""

    def __init__(self):
        self.calls = 0

    def reset(self, **row) -> None:
        pass  # self.calls is not cleared

    def tick(self) -> str:
        """Count a call."""
        self.calls += 1
        return str(self.calls)

    def get_reward(self) -> float:
        return float(self.calls)


def test_trls_pooled_instances_get_a_fresh_recipe_environment_every_rollout():
    # TRL builds the class once per pool slot and calls reset() before every rollout: each reset makes a new
    # recipe environment, so an incomplete reset carries nothing from one rollout into the next
    cls = Toolbox(environment=Counter).trainer_arguments(ToolBudget(), turn=lambda: 0)["environment_factory"]
    pooled = cls()
    pooled.reset(prompt=[])
    assert [pooled.tick(), pooled.tick()] == ["1", "2"] and pooled.get_reward() == 2.0
    pooled.reset(prompt=[])
    assert pooled.tick() == "1" and pooled.calls == 1  # a reward reading environments[i].calls sees this rollout's
    assert cls.__name__ == "Counter"  # TRL names the environment's reward after the class


def test_evaluation_gets_a_fresh_recipe_environment_every_rollout():
    box = Toolbox(environment=Counter)
    first = box.episode({})
    first.call([call("tick"), call("tick")])
    assert box.episode({}).call([call("tick")])[0]["content"] == "1"


def test_the_trainers_tools_show_the_model_the_schema_evaluation_shows():
    from transformers.utils import get_json_schema

    for box in (Toolbox((multiply, divide)), Toolbox(environment=HiddenNumber)):
        pooled = box.trainer_arguments(ToolBudget(), turn=lambda: 0)["environment_factory"]()
        assert [get_json_schema(getattr(pooled, fn.__name__)) for fn in box.functions()] == \
            [get_json_schema(fn) for fn in box.functions()]


def test_a_malformed_call_is_an_error_result_whatever_its_name_or_arguments():
    episode = Toolbox((multiply,)).episode({})
    calls = [{"type": "function", "function": {"name": None, "arguments": {}}},
             {"type": "function", "function": {"name": ["multiply"], "arguments": {}}},
             {"type": "function", "function": {"name": "\ud800", "arguments": {"\udfff": "\ud800"}}},
             {"type": "function", "function": {"name": "multiply", "arguments": "a=1, b=2"}},
             {"type": "function", "function": {"name": "multiply", "arguments": {"a": [[[[[[1]]]]]] * 2}}},
             "not a call at all"]
    results = episode.call(calls)
    assert all(r["content"].startswith("{'error': ") for r in results[:4])
    for r in results:
        r["content"].encode("utf-8")  # renderable: no lone surrogate left
        r["name"].encode("utf-8")
