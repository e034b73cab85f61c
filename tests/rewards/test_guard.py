"""kit.rewards.guard: each way a reward can break TRL's contract ends in one KitError naming it, or a logged count."""

import math
import re

import pytest

from kit.errors import KitError
from kit.rewards import AdaptiveWeight, passes_tests, row_optional
from kit.rewards.guard import CheckedReward
from tests.conftest import chat

TEXTS = ["a short one", "x" * 100 + " the long one that breaks it", "third"]


def completions():
    return [chat(t) for t in TEXTS]


def test_raising_names_the_reward_and_the_completion_that_broke_it():
    def picky(completions, answer, **kwargs):
        return [1.0 / (len(c[-1]["content"]) < 50) for c in completions]  # ZeroDivisionError on the long one

    with pytest.raises(KitError) as err:
        CheckedReward(picky)(completions(), answer=["1", "2", "3"])
    message = str(err.value)
    assert message.startswith("reward 'picky' raised ZeroDivisionError: float division by zero on completion 1 ")
    assert f"({'x' * 80!r})" in message  # the first 80 characters of that completion


def test_nan_counts_as_none_and_is_logged_for_the_monitor():
    logged = {}

    def shaky(completions, **kwargs):
        return [math.nan, 0.5, math.inf]

    values = CheckedReward(shaky)(completions(), log_metric=logged.__setitem__)
    assert values == [None, 0.5, None]
    assert logged == {"rewards/shaky/not_finite": pytest.approx(2 / 3)}
    CheckedReward(lambda completions, **kw: [0.1, 0.2, 0.3])(completions(), log_metric=logged.__setitem__)
    assert len(logged) == 1  # nothing logged for a clean batch


def test_none_for_a_whole_batch_is_an_error_unless_row_optional():
    def never(completions, tests, **kwargs):
        return [None] * len(completions)

    with pytest.raises(KitError, match=r"reward 'never' returned None \(or NaN\) for all 3 completions of a batch"
                                       r".*columns it reads \(tests\)"):
        CheckedReward(never)(completions(), tests=[None] * 3)
    assert CheckedReward(AdaptiveWeight(row_optional(never)))(completions(), tests=[None] * 3) == [None] * 3
    assert CheckedReward(passes_tests())(completions(), tests=[None] * 3) == [None] * 3  # the kit's own


def test_numpy_and_torch_scalars_are_numbers():
    import numpy as np
    import torch

    values = CheckedReward(lambda completions, **kw: [np.float32(0.5), torch.tensor(1.0), True])(completions())
    assert values == [0.5, 1.0, 1.0] and all(type(v) is float for v in values)


@pytest.mark.parametrize("returned, fragment", [
    ([0.5], "returned 1 values for 3 completions"),
    (None, "returned NoneType instead of a list"),
    (0.5, "returned float instead of a list"),
    (["yes", 1, 0], "returned 'yes' (str)"),
])
def test_a_wrong_shape_or_type_is_named(returned, fragment):
    def odd(completions, **kwargs):
        return returned

    with pytest.raises(KitError, match=re.escape(f"reward 'odd' {fragment}")):
        CheckedReward(odd)(completions())

