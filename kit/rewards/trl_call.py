"""How TRL calls a reward, built in one place for everything in the kit that calls one the same way: the trial on
empty completions before training, the gold-answer check's Trial, `kit rewards check` and evaluation.

    kwargs = trl_kwargs(prompts, dataset_columns(rows), completion_ids=ids, environments=envs)
    values = CheckedReward(fn).call(completions, kwargs)

GRPOTrainer._calculate_rewards calls `fn(prompts=..., completions=..., completion_ids=..., **columns)`, where
`columns` are the batch's dataset columns as lists (all but prompt, completion and completion_ids), plus
`trainer_state`, `log_extra` and `log_metric`, and `environments` when the rollouts have them.
"""

from __future__ import annotations

# What TRL passes a reward that is not a dataset column (a reward's parameter by one of these names reads no column)
TRL_ARGUMENTS = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
                 "environments")


def dataset_columns(rows) -> dict[str, list]:
    """Every column of `rows` (a datasets.Dataset) but the prompt, as lists: TRL passes each as a keyword."""
    return {c: list(rows[c]) for c in rows.column_names if c != "prompt"}


def trl_kwargs(prompts: list, columns: dict[str, list], completion_ids: list | None = None,
               environments: list | None = None) -> dict:
    """The keyword arguments TRL passes a reward besides `completions`, for these prompts and dataset `columns` (one
    list entry per completion). Outside training: a fresh TrainerState, loggers that log nowhere. Without
    `completion_ids` (`kit rewards check` has no tokenizer) none are passed: a length reward counts with its own."""
    from transformers import TrainerState  # what TRL passes as trainer_state (its own)

    kwargs = {"prompts": prompts, **columns}
    if completion_ids is not None:
        kwargs["completion_ids"] = completion_ids
    kwargs.update(trainer_state=TrainerState(), log_extra=log_nowhere, log_metric=log_nowhere)
    if environments is not None:
        kwargs["environments"] = environments
    return kwargs


def log_nowhere(*args, **kwargs) -> None:
    """TRL's log_extra and log_metric, outside a trainer that would log them."""
