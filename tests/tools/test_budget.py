"""Each rollout's tool budget: calls per turn and seconds per rollout, and what the model reads past it."""

import time

import pytest

from kit.config.sections import GRPOSection
from kit.tools.budget import SPENT, BudgetSpent, ToolBudget
from kit.tools.toolbox import Toolbox


def echo(text: str) -> str:
    """Echo.

    Args:
        text: what to say back
    """
    return text


def nap(seconds: float) -> str:
    """Sleep.

    Args:
        seconds: how long
    """
    time.sleep(seconds)
    return "awake"


def test_the_budgets_defaults_are_the_settings_defaults():
    fields = GRPOSection.model_fields
    assert ToolBudget() == ToolBudget(fields["tool_calls_per_turn"].default, fields["tool_seconds_per_rollout"].default)


def test_a_turn_past_its_calls_ends_the_rollouts_tool_use():
    spending = ToolBudget(calls_per_turn=2).start()
    assert [spending.run(echo, {"text": "a"}), spending.run(echo, {"text": "b"})] == ["a", "b"]
    with pytest.raises(BudgetSpent, match="more than 2 tool calls in one turn"):
        spending.run(echo, {"text": "c"})
    spending.new_turn()
    with pytest.raises(BudgetSpent):  # spent for the rest of the rollout, not only that turn
        spending.run(echo, {"text": "d"})


def test_each_turn_has_its_own_calls_when_the_budget_follows_the_turn_count():
    turn = [0]
    spending = ToolBudget(calls_per_turn=2).start(turn=lambda: turn[0])
    for turn[0] in range(5):  # TRL's loop: the reply count moves between turns
        assert [spending.run(echo, {"text": "x"}) for _ in range(2)] == ["x", "x"]


def test_tool_time_past_the_rollouts_seconds_stops_the_next_call():
    spending = ToolBudget(seconds=0.2).start()
    assert spending.run(nap, {"seconds": 0.25}) == "awake"  # a call that starts within the budget runs
    with pytest.raises(BudgetSpent, match="s of tool time"):
        spending.run(echo, {"text": "late"})


def test_a_flood_in_evaluation_gets_one_error_result_then_stops_running_tools():
    episode = Toolbox((echo,)).episode({}, ToolBudget(calls_per_turn=3))
    call = {"type": "function", "function": {"name": "echo", "arguments": {"text": "x"}}}
    results = [m["content"] for m in episode.call([call] * 40)]
    assert results[:3] == ["x"] * 3
    assert all(r.startswith("{'error': '" + SPENT) for r in results[3:])


def test_a_tools_result_and_its_error_are_made_safe_to_render():
    def lone(kind: str) -> str:
        """Misbehave.

        Args:
            kind: how
        """
        if kind == "raise":
            raise ValueError("bad \udcff")
        return "out \ud800"

    spending = ToolBudget().start()
    assert spending.run(lone, {"kind": "return"}) == "out \\ud800"
    with pytest.raises(Exception, match=r"bad \\udcff"):
        spending.run(lone, {"kind": "raise"})
