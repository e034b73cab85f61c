"""Rewards called on a few training rows as TRL calls them in training, for the checks made before it.

    trial = Trial(rows.select(spread(len(rows), 8)), recipe.toolbox)
    values = trial.values(reward, completions, " of the recipe's worked answers")   # KitError: the guard's words

Completions are chat messages, every column goes as a keyword, with TRL's own arguments (kit.rewards.trl_call: a
fresh TrainerState, loggers that log nowhere). A rollout's environment is not played: a stand-in raises NotPlayed
when read.
"""

from __future__ import annotations

from kit.errors import KitError
from kit.rewards.adaptive import AdaptiveWeight
from kit.rewards.bundle import Reward, RewardBundle
from kit.rewards.guard import CheckedReward, finite_or_none
from kit.rewards.text import as_messages
from kit.rewards.traits import documented_range
from kit.rewards.trl_call import dataset_columns, trl_kwargs

NUMERIC = ("int", "uint", "float")  # dtypes `datasets` keeps a column as numbers in


class NotPlayed(Exception):
    """A reward read a rollout's environment, which the check does not play."""


class UnplayedEnvironment:
    """Stands in for a rollout's environment: reading anything of it raises NotPlayed."""

    def __getattr__(self, name: str):
        raise NotPlayed(name)


def spread(total: int, count: int) -> list[int]:
    """`count` row indices spread over `total` rows (all of them when fewer)."""
    return sorted({i * total // count for i in range(count)}) if total > count else list(range(total))


class Trial:
    """Rewards called on a few training rows as TRL calls them in training."""

    def __init__(self, rows, toolbox):
        self.rows = rows
        self.columns = dataset_columns(rows)
        self.environment = toolbox.environment is not None
        self.environment_reward = toolbox.reward_name

    def values(self, reward: Reward, completions: list, where: str, **changed: list) -> list[float | None]:
        """One value per completion; the completions go round the rows (several per row, row after row).
        Raises KitError (in the guard's words) when the reward breaks the contract, NotPlayed when it reads an
        environment."""
        laps = len(completions) // len(self.rows)
        columns = {name: values * laps for name, values in {**self.columns, **changed}.items()}
        environments = [UnplayedEnvironment() for _ in completions] if self.environment else None
        kwargs = trl_kwargs(list(self.rows["prompt"]) * laps, columns, completion_ids=[[] for _ in completions],
                            environments=environments)
        fn = reward.fn.fn if isinstance(reward.fn, AdaptiveWeight) else reward.fn  # a check must not move its scale
        try:
            return finite_or_none(CheckedReward(fn).call(completions, kwargs, where=where))
        except KitError as err:
            if isinstance(err.__cause__, NotPlayed):
                raise err.__cause__ from None
            raise

    def floor(self, reward: Reward) -> float:
        """What does not count as paying: its documented minimum (0 for a reward that documents none), or less when
        it gives an empty completion less."""
        low = documented_range(reward.fn)[0]
        completions = [as_messages("", "assistant")] * len(self.rows)
        empty = [v for v in self.values(reward, completions, " of empty completions") if v is not None]
        return min([0.0 if low is None else low, *empty])

    def skipped(self, names: list[str]) -> str:
        """The summary's tail: what was left out for want of a played environment."""
        own = [f"{self.environment_reward} (the environment's reward)"] if self.environment_reward else []
        left_out = names + own
        return f"; not checked, as the check plays no environment: {', '.join(left_out)}" if left_out else ""

    def numeric_columns(self, reward: Reward, declared_only: bool = False) -> list[str]:
        """The numeric columns the reward takes by name; for one that takes none by name (it reads **kwargs), every
        numeric column unless `declared_only`."""
        read = reads(reward)
        numeric = [c for c in self.columns if self.dtype(c).startswith(NUMERIC)]
        return [c for c in numeric if c in read] if read or declared_only else numeric

    def dtype(self, column: str) -> str:
        feature = self.rows.features.get(column)
        return getattr(feature, "dtype", None) or type(feature).__name__

    def column_types(self, columns: list[str]) -> str:
        """"column 'answer' is int64", or "columns 'a' (int64) and 'b' (float64) are numbers"."""
        if len(columns) == 1:
            return f"column '{columns[0]}' is {self.dtype(columns[0])}"
        return f"columns {' and '.join(f'{c!r} ({self.dtype(c)})' for c in columns)} are numbers"


def pays(value: float | None, floor: float) -> bool:
    return value is not None and value > floor


def reads(reward: Reward) -> list[str]:
    """The dataset columns the reward takes by name."""
    return RewardBundle((reward.fn, 1.0)).columns_needed()[reward.name]
