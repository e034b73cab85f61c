"""What counts as right in evaluation, said with the reward functions that train: a recipe's EVAL.

    EVAL = Scoring(
        strict=(answer_correct, FORMAT),    # the right answer AND the required format: each gives 1.0
        lenient=last_number_correct,        # the right number stated anywhere
        formatted=FORMAT,                   # the format, right or wrong
    )

Each judge is a reward function (TRL's signature: `fn(completions, **columns) -> list[float | None]`), a
`Passes(fn, at_least)` for a reward whose partial credit counts from a threshold (a fuzzy match from 0.8),
or a tuple of these, all of which must pass. A completion passes a reward that gives it `at_least` (full
marks, 1.0, unless said); None ("does not apply to this row") does not pass: evaluation cannot call it right.

One signature for training and judging means one implementation of "right": the number in a recipe's
before/after table is the reward the policy was paid, read as yes or no, never a second rule beside it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Union

from kit.errors import KitError
from kit.rewards.guard import CheckedReward
from kit.rewards.text import as_messages
from kit.rewards.trl_call import trl_kwargs

RewardFn = Callable[..., list]


@dataclass(frozen=True)
class Passes:
    """`fn` gives a completion `at_least` (full marks unless said)."""

    fn: RewardFn
    at_least: float = 1.0


Judge = Union[RewardFn, Passes, tuple]  # one reward, one with a threshold, or a tuple of them (all must pass)


class Verdict(NamedTuple):
    """One completion, judged: right in the required format, right anywhere, in format (None: not reported)."""

    strict: bool
    lenient: bool
    formatted: bool | None


class Verdicts(NamedTuple):
    """A batch of completions, judged; the fields of Verdict, one list each."""

    strict: list[bool]
    lenient: list[bool]
    formatted: list[bool] | None


@dataclass(frozen=True, init=False)
class Scoring:
    """A recipe's EVAL: strict, lenient and (optionally) formatted, each a judge made of reward functions."""

    strict: tuple[Passes, ...]
    lenient: tuple[Passes, ...]
    formatted: tuple[Passes, ...] | None

    def __init__(self, strict: Judge, lenient: Judge, formatted: Judge | None = None):
        object.__setattr__(self, "strict", _requirements(strict, "strict"))
        object.__setattr__(self, "lenient", _requirements(lenient, "lenient"))
        object.__setattr__(self, "formatted", None if formatted is None else _requirements(formatted, "formatted"))

    def judge(self, completions: list, columns: dict, computed: dict | None = None) -> Verdicts:
        """Each completion judged; each reward is called once per batch, through the reward guard.

        `columns` are the keyword lists a reward gets in training (`prompts`, the dataset columns);
        `computed` maps a reward function to the values already computed for this batch (the bundle's).
        """
        values = dict(computed or {})

        def passes(requirements: tuple[Passes, ...]) -> list[bool]:
            verdicts = [True] * len(completions)
            for need in requirements:
                if need.fn not in values:
                    values[need.fn] = CheckedReward(need.fn).call(completions, columns, where=" in evaluation")
                verdicts = [ok and v is not None and v >= need.at_least for ok, v in zip(verdicts, values[need.fn])]
            return verdicts

        return Verdicts(passes(self.strict), passes(self.lenient),
                        None if self.formatted is None else passes(self.formatted))

    def verdict(self, text: str | list[dict], row: dict) -> Verdict:
        """One reply (its text, or with tools the completion's messages) to one dataset row, judged (for tests
        and `kit rewards check`)."""
        columns = {k: [v] for k, v in row.items() if k != "prompt"}  # called as TRL calls rewards in training
        judged = self.judge([as_messages(text, "assistant")], trl_kwargs([row.get("prompt")], columns))
        return Verdict(judged.strict[0], judged.lenient[0], None if judged.formatted is None else judged.formatted[0])


def _requirements(judge: Judge, name: str) -> tuple[Passes, ...]:
    parts = judge if isinstance(judge, tuple) else (judge,)
    if not parts:
        raise KitError(f"Scoring({name}=()) names no reward; give at least one reward function")
    requirements = tuple(part if isinstance(part, Passes) else Passes(part) for part in parts)
    for need in requirements:
        if not _takes_completions(need.fn):
            raise KitError(f"Scoring({name}=...) got {need.fn!r:.60}, which is not a reward function; judges are "
                           "rewards with TRL's signature, fn(completions, **columns) -> list of numbers (e.g. "
                           "answer_correct), Passes(fn, at_least), or a tuple of them")
    return requirements


def _takes_completions(fn) -> bool:
    """Callable as fn(completions=[...], **columns): how the guard calls every reward."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # not callable, or a builtin without a signature
        return False
    return any(p.name == "completions" or p.kind is p.VAR_KEYWORD for p in parameters)
