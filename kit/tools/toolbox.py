"""A recipe's tools: plain functions (TOOLS) or an environment class (ENVIRONMENT), checked and handed out.

TRL's GRPOTrainer takes them as `environment_factory=Class`: the kit hands it one class for both kinds
(rollout_environment), whose instances TRL pools and resets for every rollout. Its reset makes a new instance
of the recipe's environment, so no state crosses from one rollout into the next however the recipe's own
reset is written, and its tool methods call the recipe's tools within the rollout's budget (kit.tools.budget).
Evaluation (kit.eval.rollout) hands them out the same way: one fresh environment and one budget per rollout.
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
from kit.tools.budget import Spending, ToolBudget
from kit.tools.reply_guard import safe_call

NOT_TOOLS = {"reset", "get_reward"}  # an environment's methods TRL does not offer the model


@dataclass(frozen=True)
class Episode:
    """What one rollout gets: its tools by name, its environment (or None), what reset() said, its budget."""

    tools: dict[str, Callable]
    environment: Any = None
    observation: str | None = None
    spending: Spending = field(default_factory=lambda: ToolBudget().start())

    def call(self, calls: list[dict]) -> list[dict]:
        """One turn's calls, each result a tool message by TRL's rules: `fn(**arguments)`, `str(result)`, and any
        failure (an unknown name, the budget spent) the result `{'error': ...}`, the model's to read, never a crash."""
        self.spending.new_turn()
        messages = []
        for call in calls:
            function = safe_call(call)["function"]
            name = function["name"]
            try:
                if name not in self.tools:
                    raise ValueError(f"Tool {name} not found.")
                result = self.spending.run(self.tools[name], function["arguments"])
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

    def trainer_arguments(self, budget: ToolBudget, turn: Callable[[], int]) -> dict:
        """GRPOTrainer's keyword arguments for these tools: one class for tools and environments alike
        (rollout_environment); `turn` tells the budget a new turn (kit.tools.reply_guard.ReplyGuard's count)."""
        return {"environment_factory": rollout_environment(self, budget, turn)} if self else {}

    def functions(self) -> list[Callable]:
        """The tools as the chat template renders them (an environment's, from an instance of it)."""
        return list(self.tools) if self.environment is None else list(environment_tools(self.environment()).values())

    def episode(self, row: dict, budget: ToolBudget | None = None) -> Episode:
        """A fresh rollout's tools: a new environment reset with the whole row (as TRL does), or the functions."""
        spending = (budget or ToolBudget()).start()
        if self.environment is None:
            return Episode({fn.__name__: fn for fn in self.tools}, spending=spending)
        environment = self.environment()
        observation = environment.reset(**row)
        return Episode(environment_tools(environment), environment, observation, spending)

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


def rollout_environment(toolbox: Toolbox, budget: ToolBudget, turn: Callable[[], int]) -> type:
    """The class TRL's environment_factory builds for `toolbox`: reset() makes a fresh recipe environment (or none,
    for plain tools) and a fresh budget; each tool is a method with the tool's own signature and docstring (so the
    prompt shows the same schema as evaluation's), calling it within the budget; get_reward and any attribute a
    reward reads (`environments[i].solved`) come from the recipe's environment."""
    recipe_environment = toolbox.environment

    def reset(self, **row):
        self.environment = recipe_environment() if recipe_environment else None
        self.spending = budget.start(turn)
        return self.environment.reset(**row) if self.environment is not None else None

    def __getattr__(self, name):  # only for what the class itself lacks: the recipe environment's attributes
        environment = self.__dict__.get("environment")
        if environment is None:
            raise AttributeError(name)
        return getattr(environment, name)

    namespace = {"reset": reset, "__getattr__": __getattr__, "__doc__": recipe_environment.__doc__
                 if recipe_environment else "The recipe's tools, within each rollout's budget."}
    if toolbox.rewarded_by_environment:
        namespace["get_reward"] = environment_reward(recipe_environment.get_reward)
    for fn in toolbox.functions():
        namespace[fn.__name__] = budgeted_method(fn, bound=recipe_environment is not None)
    name = recipe_environment.__name__ if recipe_environment else "RecipeTools"  # TRL's reward name is the class's
    return type(name, (), namespace)


def environment_reward(get_reward: Callable) -> Callable:
    """get_reward from the rollout's recipe environment, async where the recipe's is (TRL awaits it then)."""
    if inspect.iscoroutinefunction(get_reward):
        async def reward(self):
            return await self.environment.get_reward()
    else:
        def reward(self):
            return self.environment.get_reward()
    return reward


def budgeted_method(tool: Callable, bound: bool) -> Callable:
    """A method that runs `tool` (a bound method of the recipe's environment when `bound`, looked up per rollout)
    within the rollout's budget; it shows the model exactly what the tool shows."""
    name = tool.__name__

    def method(self, **arguments):
        target = getattr(self.environment, name) if bound else tool
        return self.spending.run(target, arguments)

    signature = inspect.signature(tool)
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = signature.replace(parameters=[self_parameter, *signature.parameters.values()])
    method.__name__ = method.__qualname__ = name
    method.__doc__ = tool.__doc__
    method.__annotations__ = dict(getattr(tool, "__annotations__", {}))
    return method
