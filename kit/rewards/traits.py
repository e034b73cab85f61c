"""What the kit reads off a reward function besides its signature: traits set on the function as attributes.

    reward_range      (low, high), where it is not the kit's 0..1 (the published shapes in kit/rewards/length.py)
    row_optional      True: it may return None for a whole batch, as it applies to some rows only
    runs_model_code   True: it runs the completion's code, so a run checks the sandbox before training
    source            a dict saying which model scores it (a reward model, an LLM judge): run.yaml records it,
                      `kit plan` counts a reward model's memory (never a secret: an API key's variable name only)
    preflight         a function called once before training (and by `kit rewards check`): raises KitError when
                      what the reward needs is not there (a judge's server that does not answer)

    @with_traits(runs_model_code=True)          # or: fn = with_traits(fn, reward_range=(-1.0, 0.0))
    trait(fn, "row_optional", False)            # read through the kit's wrappers
    documented_range(fn)                        # its reward_range; a kit reward without one: 0..1

The kit's wrappers (AdaptiveWeight, CheckedReward, CountedReward) keep the function they wrap as `.fn`; `trait`
reads the outermost value first (AdaptiveWeight's range is its own: the scaled one).
"""

from __future__ import annotations

TRAITS = ("reward_range", "row_optional", "runs_model_code", "source", "preflight")
KIT_RANGE = (0.0, 1.0)  # every kit reward documents [0, 1]


def trait(fn, name: str, default=None):
    """The trait `name` of a reward, or of the function a wrapper holds; `default` when none sets it."""
    if name not in TRAITS:
        raise ValueError(f"{name} is not a reward trait; the kit reads {', '.join(TRAITS)}")
    while fn is not None:
        if hasattr(fn, name):
            return getattr(fn, name)
        fn = getattr(fn, "fn", None)
    return default


def with_traits(fn=None, **traits):
    """Set traits on a reward function; returns it. Used bare (`with_traits(fn, ...)`) or as a decorator."""
    unknown = set(traits) - set(TRAITS)
    if unknown:
        raise ValueError(f"{', '.join(sorted(unknown))}: not reward traits; the kit reads {', '.join(TRAITS)}")

    def mark(function):
        for name, value in traits.items():
            setattr(function, name, value)
        return function

    return mark if fn is None else mark(fn)


def unwrapped(fn):
    """The reward function itself, inside the kit's wrappers."""
    while hasattr(fn, "fn"):
        fn = fn.fn
    return fn


def documented_range(fn) -> tuple[float | None, float | None]:
    """Its reward_range; a kit reward without one gives 0..1; a user's says nothing."""
    kit_reward = unwrapped(fn).__module__.startswith("kit.rewards")
    return trait(fn, "reward_range", KIT_RANGE if kit_reward else (None, None))
