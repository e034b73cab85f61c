import pytest

from kit.rewards import AdaptiveWeight, row_optional, with_traits
from kit.rewards.guard import CheckedReward, is_row_optional
from kit.rewards.traits import trait, unwrapped


def scored(completions, **kwargs):
    return [1.0 for _ in completions]


def test_a_trait_is_read_through_the_kits_wrappers():
    fn = with_traits(lambda completions, **kwargs: [0.0] * len(completions), runs_model_code=True)
    fn.__name__ = "marked"
    wrapped = CheckedReward(AdaptiveWeight(fn))
    assert trait(wrapped, "runs_model_code", False) is True
    assert unwrapped(wrapped) is fn
    assert trait(CheckedReward(scored), "runs_model_code", False) is False  # none set it


def test_the_outermost_value_wins():
    """AdaptiveWeight's range is the scaled one, not the function's own."""
    fn = with_traits(scored, reward_range=(0.0, 1.0))
    adaptive = AdaptiveWeight(fn, bounds=(0.25, 4.0))
    assert trait(CheckedReward(adaptive), "reward_range") == (0.0, 4.0)
    assert trait(fn, "reward_range") == (0.0, 1.0)


def test_with_traits_as_a_decorator_and_row_optional():
    @with_traits(reward_range=(-1.0, 0.0))
    def penalty(completions, **kwargs):
        return [0.0] * len(completions)

    assert penalty.reward_range == (-1.0, 0.0)
    assert not is_row_optional(penalty)
    assert is_row_optional(CheckedReward(row_optional(penalty)))


def test_a_misspelt_trait_is_refused():
    with pytest.raises(ValueError, match="row_optinal: not reward traits"):
        with_traits(scored, row_optinal=True)
    with pytest.raises(ValueError, match="not a reward trait"):
        trait(scored, "range")
