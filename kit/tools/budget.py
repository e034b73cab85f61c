"""Each rollout's budget of tool use: calls per turn, and seconds of tool time in the whole rollout.

    budget = ToolBudget(calls_per_turn=8, seconds=60.0)     # grpo.tool_calls_per_turn, grpo.tool_seconds_per_rollout
    spending = budget.start()                               # one per rollout
    spending.new_turn()                                     # where the caller knows its turns (kit.eval.rollout)
    spending.run(tool, {"code": "print(1)"})                # the tool's result, or BudgetSpent

TRL runs a turn's calls one after another, and every step waits for its slowest rollout, so a policy that
writes forty calls in a reply stalls the whole batch. Past either limit the call raises BudgetSpent, and so
does every later call of that rollout: the model reads the reason as the call's `{'error': ...}` result, and
kit.tools.stats counts the rollout in tools/over_budget, which the health checks name. A call that starts
within the time budget runs to its own limit (python_tool's timeout); the budget stops the next one.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit.tools.reply_guard import safe_text

SPENT = "tool budget spent"  # how a result that met the budget starts (after TRL's "{'error': '")


class BudgetSpent(Exception):
    pass


class ToolFailed(Exception):
    """A tool's own exception, its text made safe to render (TRL shows str(error) to the model)."""


@dataclass(frozen=True)
class ToolBudget:
    calls_per_turn: int = 8  # grpo.tool_calls_per_turn's default (tests/tools/test_budget.py keeps them alike)
    seconds: float = 60.0  # grpo.tool_seconds_per_rollout's

    def start(self, turn: Callable[[], int] | None = None) -> Spending:
        """One rollout's spending. `turn` says which turn it is (a number that changes between turns) for a caller
        that cannot call new_turn() itself: TRL's loop, through kit.tools.reply_guard.ReplyGuard's count of replies."""
        return Spending(self, turn)


class Spending:
    def __init__(self, budget: ToolBudget, turn: Callable[[], int] | None):
        self.budget, self.turn = budget, turn
        self.seen_turn = turn() if turn else 0
        self.calls, self.seconds = 0, 0.0
        self.spent: str | None = None

    def new_turn(self) -> None:
        self.calls = 0

    def run(self, tool: Callable, arguments: dict[str, Any]):
        """`tool(**arguments)`, its result made safe to render, if the budget allows the call."""
        self._follow_turns()
        self.calls += 1
        if self.spent is None and self.calls > self.budget.calls_per_turn:
            self.spent = (f"{SPENT}: more than {self.budget.calls_per_turn} tool calls in one turn "
                          "(grpo.tool_calls_per_turn); no more tool calls in this rollout")
        elif self.spent is None and self.seconds >= self.budget.seconds:
            self.spent = (f"{SPENT}: {self.seconds:.1f} s of tool time, over this rollout's "
                          f"{self.budget.seconds:g} s (grpo.tool_seconds_per_rollout); no more tool calls")
        if self.spent:
            raise BudgetSpent(self.spent)
        start = time.monotonic()
        try:
            result = tool(**arguments)
            if inspect.isawaitable(result):
                result = asyncio.run(result)
        except Exception as err:  # noqa: BLE001  (the tool's failure is its result; TRL shows str(err))
            raise ToolFailed(safe_text(str(err))) from None
        finally:
            self.seconds += time.monotonic() - start
        return result if isinstance(result, list) else safe_text(str(result))  # a list: multimodal content, as TRL

    def _follow_turns(self) -> None:
        if self.turn is not None and self.turn() != self.seen_turn:
            self.seen_turn = self.turn()
            self.new_turn()
