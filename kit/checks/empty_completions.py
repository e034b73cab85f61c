"""Before training: each reward called once on empty completions of the first rows, as TRL will call it, so a reward
that cannot run at all fails before anything is written (in the guard's words, kit.rewards.guard).

    try_on_empty_completions(rewards.funcs, rows, recipe.toolbox)   # KitError: what training would stop on

`kit rewards check` makes the same call on its samples' first rows (try_on_empty).
"""

from __future__ import annotations

from kit.rewards.adaptive import AdaptiveWeight
from kit.rewards.guard import CheckedReward
from kit.rewards.traits import trait
from kit.rewards.trl_call import dataset_columns, trl_kwargs


def try_on_empty_completions(funcs: list, rows, toolbox=None) -> None:
    """Each reward once on empty completions of the first two rows, as TRL will call it; before any writing.

    Only what no completion can excuse is checked here (raising, a wrong count or type): an empty
    completion may well be one a reward does not apply to. With an environment, each row gets a fresh one,
    reset with the row, as `environments`.
    """
    sample = rows.select(range(min(2, len(rows))))
    environments = None
    if toolbox is not None and toolbox.environment is not None:
        environments = [toolbox.episode(row).environment for row in sample]
    kwargs = trl_kwargs(list(sample["prompt"]), dataset_columns(sample), environments=environments)
    for fn in funcs:
        if trait(fn, "source") is None:  # a model-scored reward is the kit's own, checked by its preflight: a trial
            try_on_empty(fn, len(sample), kwargs)  # would load its model here (a launcher's GPU 0) or ask its judge


def try_on_empty(fn, count: int, kwargs: dict) -> None:
    """One reward on `count` empty completions, as TRL hands them over, with `kwargs` (trl_kwargs) for their rows."""
    completions = [[{"role": "assistant", "content": ""}] for _ in range(count)]
    base = fn.fn if isinstance(fn, AdaptiveWeight) else fn  # a trial call must not move its multiplier
    CheckedReward(base).call(completions, {"completion_ids": [[] for _ in completions], **kwargs},
                             where=" of empty completions tried before training")
