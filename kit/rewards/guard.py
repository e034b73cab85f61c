"""The reward contract, enforced: every reward the trainer calls goes through `CheckedReward`.

    fn(completions, **columns) -> list[float | None]     one value per completion; None: "does not apply"

TRL would turn a broken reward into a traceback from deep inside its trainer, or into silence: None and
NaN both become NaN there, which it leaves out of every mean. So, for each batch:
- a reward that raises stops the run with one line naming the reward, the line of its file it failed at and
  the completion (and row) it failed on (kit.user_code; -v shows the traceback);
- one that returns something other than one value per completion (a wrong count, None, a string) stops it;
- one that returns None (or NaN) for every completion of a batch stops it, unless it is `row_optional`
  (it applies to some rows only, such as code tests in a dataset where few rows have tests);
- NaN or inf for some completions is counted as None, as TRL would, and logged as
  rewards/<name>/not_finite (the fraction of completions), which the health monitor warns about:
  one odd completion should not end a long run, but it must not pass unseen.

The checks before training (kit/checks/) call rewards through it too: kit.checks.empty_completions calls each
once on empty completions of the first rows, so a reward that cannot run at all fails before anything is written,
and `kit rewards check` (kit.checks.rewards_check) runs the same checks on sample completions, so what it calls
an error is what training would stop on, in the same words.
"""

from __future__ import annotations

import inspect
import math

from kit.errors import KitError
from kit.rewards.bundle import RewardBundle
from kit.rewards.text import completion_text
from kit.rewards.traits import trait, with_traits
from kit.rewards.trl_call import TRL_ARGUMENTS
from kit.user_code import preview, user_error


def row_optional(fn):
    """Mark a reward that may return None for a whole batch: it applies to some rows of the data only."""
    return with_traits(fn, row_optional=True)


def is_row_optional(fn) -> bool:
    return trait(fn, "row_optional", False)


class CheckedReward:
    """`fn` with its results checked; keeps its name (TRL's metric name) and signature (the columns it reads)."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__signature__ = inspect.signature(fn)

    def __call__(self, completions, **kwargs) -> list[float | None]:
        values = self.call(completions, kwargs)
        numbers = finite_or_none(values)
        self.require_some_row(numbers)
        not_finite = sum(v is not None for v in values) - sum(v is not None for v in numbers)
        log_metric = kwargs.get("log_metric")
        if not_finite and log_metric is not None:
            log_metric(f"rewards/{self.__name__}/not_finite", not_finite / len(values))
        return numbers

    def require_some_row(self, numbers: list[float | None]) -> None:
        """A batch it applied to none of (None for every completion) is an error, unless it is row_optional."""
        if all(v is None for v in numbers) and not is_row_optional(self.fn):
            raise KitError(f"reward '{self.__name__}' returned None (or NaN) for all {len(numbers)} completions "
                           "of a batch: it applied to none of its rows. Check the dataset columns it reads "
                           f"({', '.join(self.columns()) or 'none'}), or mark it kit.rewards.row_optional if it "
                           "applies to some rows only")

    def call(self, completions, kwargs: dict, where: str = "") -> list:
        """The reward's values, or one KitError saying how it broke the contract."""
        try:  # free while nothing is raised: the guard costs a training step nothing
            values = self.fn(completions=completions, **kwargs)
        except KitError:
            raise  # said on purpose (the kit's code rewards, a sandbox that cannot run)
        except Exception as err:  # noqa: BLE001  (user code may raise anything; it is re-raised as one line)
            row = first_failing_row(self.fn, completions, kwargs)
            raise user_error(self.fn, err, f"reward '{self.__name__}'",
                             f" on completion {row} of a batch{where} {failing_row(completions, kwargs, row)}",
                             "a reward must return a number or None for any text the model writes") from err
        if not hasattr(values, "__len__") or isinstance(values, (str, bytes, dict)):
            raise KitError(f"reward '{self.__name__}' returned {type(values).__name__} instead of a list of one "
                           "value per completion (did it forget `return`?)")
        if len(values) != len(completions):
            raise KitError(f"reward '{self.__name__}' returned {len(values)} values for {len(completions)} "
                           "completions; return exactly one value (a number, or None) per completion")
        return [self.number(v) for v in values]

    def number(self, value) -> float | None:
        """None, or the value as a float: numpy and torch scalars pass, as TRL takes them; text does not."""
        if value is None:
            return None
        if not isinstance(value, (str, bytes)):  # float('0.5') would pass text off as a number
            try:
                return float(value)
            except (TypeError, ValueError):  # a list, a tensor of several values, ...
                pass
        raise KitError(f"reward '{self.__name__}' returned {value!r:.60} ({type(value).__name__}); "
                       "return a number, or None where the reward does not apply")

    def columns(self) -> list[str]:
        return next(iter(RewardBundle((self.fn, 1.0)).columns_needed().values()))


def finite_or_none(values: list[float | None]) -> list[float | None]:
    """NaN and inf as None: TRL counts both as "does not apply"."""
    return [v if v is None or math.isfinite(v) else None for v in values]


def first_failing_row(fn, completions, kwargs: dict) -> int:
    """Which completion makes `fn` raise: re-run it one row at a time (only after it failed on the batch)."""
    count = len(completions)
    for row in range(count):
        sliced = {k: [v[row]] if isinstance(v, list) and len(v) == count else v for k, v in kwargs.items()}
        try:
            fn(completions=[completions[row]], **sliced)
        except Exception:  # noqa: BLE001  (any exception marks the row)
            return row
    return 0  # it fails only on the whole batch: show the first


def failing_row(completions, kwargs: dict, row: int) -> str:
    """The completion's text and the row's dataset columns, shortened: which row of the data it was."""
    columns = {k: v[row] for k, v in kwargs.items()
               if k not in TRL_ARGUMENTS and isinstance(v, list) and len(v) == len(completions)}
    text = f"({completion_text(completions[row])[:80]!r})"
    return f"{text} for the row with {preview(columns, 80)}" if columns else text

