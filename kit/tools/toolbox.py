"""A recipe's tools: plain functions (TOOLS) or an environment class (ENVIRONMENT), checked and handed out.

TRL's GRPOTrainer takes them as `tools=[fn, ...]` or `environment_factory=Class`; evaluation
(kit.eval.rollout) hands them out the same way, one environment per rollout, reset with the row.
A tool needs type hints and a Google-style docstring with an `Args:` line per argument: that is what the
model is shown (transformers' get_json_schema). An environment is a class built with no arguments, with
`reset(**row)` (it may return text, which is appended to the prompt), its tools as public methods, and
optionally `get_reward()`, which TRL adds as a reward named after the class (weight 1).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kit.errors import KitError

NOT_TOOLS = {"reset", "get_reward"}  # an environment's methods TRL does not offer the model


@dataclass(frozen=True)
class Episode:
    """What one rollout gets: its tools by name, its environment (or None), and what reset() said."""

    tools: dict[str, Callable]
    environment: Any = None
    observation: str | None = None

    def call(self, calls: list[dict]) -> list[dict]:
        """Each call's result as a tool message, by TRL's rules: `fn(**arguments)`, `str(result)`, and any
        failure (an unknown name included) the result `{'error': ...}`, the model's to read, never a crash."""
        messages = []
        for call in calls:
            name, arguments = call["function"]["name"], call["function"].get("arguments") or {}
            try:
                if name not in self.tools:
                    raise ValueError(f"Tool {name} not found.")
                result = self.tools[name](**arguments)
                if inspect.isawaitable(result):
                    import asyncio

                    result = asyncio.run(result)
            except Exception as err:  # noqa: BLE001  (as TRL: any failure is the tool's result)
                result = {"error": str(err)}
            messages.append({"role": "tool", "name": name, "content": str(result)})
        return messages


@dataclass(frozen=True)
class Toolbox:
    tools: tuple[Callable, ...] = ()
    environment: type | None = None
    source: str = field(default="", compare=False)  # the recipe, for messages

    def __bool__(self) -> bool:
        return bool(self.tools) or self.environment is not None

    @property
    def rewarded_by_environment(self) -> bool:
        return self.environment is not None and hasattr(self.environment, "get_reward")

    @property
    def reward_name(self) -> str | None:
        """The name TRL logs the environment's reward under (rewards/<name>/mean)."""
        return self.environment.__name__ if self.rewarded_by_environment else None

    def trainer_arguments(self) -> dict:
        """GRPOTrainer's keyword arguments for these tools."""
        if self.environment is not None:
            return {"environment_factory": self.environment}
        return {"tools": list(self.tools)} if self.tools else {}

    def functions(self) -> list[Callable]:
        """The tools as the chat template renders them (an environment's, from an instance of it)."""
        return list(self.tools) if self.environment is None else list(environment_tools(self.environment()).values())

    def episode(self, row: dict) -> Episode:
        """A fresh rollout's tools: a new environment reset with the whole row (as TRL does), or the functions."""
        if self.environment is None:
            return Episode({fn.__name__: fn for fn in self.tools})
        environment = self.environment()
        observation = environment.reset(**row)
        return Episode(environment_tools(environment), environment, observation)

    def replay(self, row: dict, completion: list[dict]):
        """A fresh environment, reset with `row`, that has seen the completion's tool calls (for `kit rewards
        check`, which scores recorded transcripts); None without an environment."""
        if self.environment is None:
            return None
        episode = self.episode(row)
        for message in completion if isinstance(completion, list) else []:
            if isinstance(message, dict) and message.get("tool_calls"):
                episode.call(message["tool_calls"])
        return episode.environment

    def check(self) -> None:
        """Refuse, at recipe load, a tool the model could not be shown or an environment TRL would refuse."""
        if self.environment is not None:
            self._check_environment()
        for fn in self.functions():
            check_tool(fn, self.source)

    def _check_environment(self) -> None:
        cls = self.environment
        where = f"recipe '{self.source}': ENVIRONMENT {getattr(cls, '__name__', '')}"
        if not inspect.isclass(cls):
            raise KitError(f"{where} must be a class (an instance per rollout is made from it), "
                           f"not {type(cls).__name__}")
        if not callable(getattr(cls, "reset", None)):
            raise KitError(f"{where} has no reset(self, **row) method: TRL calls it before every rollout")
        try:
            instance = cls()
        except Exception as err:  # noqa: BLE001  (whatever its constructor raises, said in one line)
            raise KitError(f"{where}() failed ({type(err).__name__}: {err}): it must build with no arguments") from None
        if not environment_tools(instance):
            raise KitError(f"{where} has no public methods besides reset and get_reward: those are the model's tools")


def environment_tools(environment) -> dict[str, Callable]:
    """An environment's tools, as TRL picks them: public functions on its class but reset and get_reward."""
    return {name: getattr(environment, name) for name, _ in inspect.getmembers(type(environment), inspect.isfunction)
            if not name.startswith("_") and name not in NOT_TOOLS}


def check_tool(fn: Callable, source: str) -> None:
    from transformers.utils import get_json_schema

    try:
        get_json_schema(fn)
    except Exception as err:  # noqa: BLE001  (transformers' own reason, said with what to write)
        raise KitError(f"recipe '{source}': tool {getattr(fn, '__name__', fn)!r} cannot be shown to the model "
                       f"({err}); a tool needs type hints and a Google-style docstring with an Args: line for "
                       "every argument") from None
