"""The SFT warm start (stage `sft`): supervised steps on the recipe's worked answers before GRPO.

Unsloth's Qwen3 GRPO notebook calls it format priming: a model that already answers in the required
format gets rewards that differ between completions from GRPO's first step. The recipe supplies the
target per row with `sft_target(row)`. The kit tokenizes the rows itself (sft_rows.py), so TRL's SFTTrainer
on a CPU and the trainer Unsloth generates on a GPU train on the same tokens, and only on what the model writes.
"""

from __future__ import annotations

from kit.config import RunConfig
from kit.errors import KitError
from kit.outputs import RunDir
from kit.recipe import Recipe
from kit.train.stages.contract import StageInputs
from kit.train.stages.settings import (
    CHECKPOINTING_SET_BY,
    checked_extra,
    checkpointing,
    multi_process_checkpointing,
    pinned_defaults,
)
from kit.train.stages.sft_rows import tokenized
from kit.user_code import call_user, preview

# What the kit sets in SFTConfig itself, and where the user changes it instead.
KIT_SETS = {"output_dir": "--out", "seed": "the top-level setting seed", "save_strategy": "the run (it saves "
            "after the last stage)", "report_to": "grpo.report_to", "max_length": "model.max_seq_length",
            "completion_only_loss": "the worked answers' assistant turns (the loss covers them alone)",
            **CHECKPOINTING_SET_BY}


def sft_dataset(recipe: Recipe, rows):
    """Prompt-completion rows in chat format: the prompt as is, the worked answer as the completion.

    A target is the assistant's text, or (with tools) the completion's messages: calls, results, answer."""
    if recipe.sft_target is None:
        raise KitError(f"stages has sft, but recipe '{recipe.name}' defines no sft_target(row) -> str to learn from")

    def worked(row: dict, index: int) -> dict:
        target = call_user(recipe.sft_target, row, label="sft_target()",
                           context=lambda: f" on row {index} of the training rows ({preview(row)})")
        return {"completion": target if isinstance(target, list) else [{"role": "assistant", "content": target}]}

    return rows.map(worked, with_indices=True)


def arguments(inputs: StageInputs):
    sft_dataset(inputs.recipe, inputs.rows.select(range(1)))  # the recipe must know how to write a worked answer
    return sft_args(inputs.cfg, inputs.out)


def sft_args(cfg: RunConfig, out: RunDir):
    from trl import SFTConfig

    s = cfg.sft
    extra = checked_extra("sft", s.extra, SFTConfig, KIT_SETS)
    args = SFTConfig(
        output_dir=str(RunDir(out).sft_checkpoints),
        seed=cfg.seed,
        save_strategy="no",  # a warm start of minutes; the run saves after the last stage
        report_to=cfg.grpo.report_to,
        max_length=cfg.model.max_seq_length,
        completion_only_loss=True,  # the rows' completion_mask (kit-tokenized rows carry no prompt column to infer it)
        **{**pinned_defaults(SFTConfig), **checkpointing(cfg), **s.model_dump(exclude={"extra"}), **extra},
    )
    return multi_process_checkpointing(args, extra)


def template_options(cfg: RunConfig) -> dict:
    """The chat template's options for the worked answers: sft.extra's if set, else GRPO's, so the warm start
    sees its prompts as GRPO and evaluation do (e.g. enable_thinking)."""
    return cfg.sft.extra.get("chat_template_kwargs", cfg.grpo.chat_template_kwargs) or {}


def train(inputs: StageInputs, args, stopper=None):
    """Train the warm start in place; returns the trainer (its save_model gathers sharded weights)."""
    from trl import SFTTrainer

    from kit.data.row_pictures import image_column
    from kit.monitor.console import use_step_lines
    from kit.monitor.finite import FiniteGuard
    from kit.monitor.metrics import MetricsFile
    from kit.monitor.pace import StepPace

    cfg, out = inputs.cfg, inputs.out
    name = inputs.stage.name if inputs.stage else "sft"
    per_step = cfg.sft.per_device_train_batch_size * cfg.sft.gradient_accumulation_steps * cfg.launch.total_processes
    print(f"{name}: {cfg.sft.max_steps} steps of {per_step} worked answers, learning rate {cfg.sft.learning_rate:g}")
    callbacks = [MetricsFile(out.metrics, stage=name), FiniteGuard(name, cfg.sft.learning_rate), StepPace()]
    callbacks += [stopper] if stopper else []
    worked = sft_dataset(inputs.recipe, inputs.rows)
    if column := image_column(worked):  # TRL's vision collator renders, tokenizes and masks them, pictures and all
        rows = worked.select_columns(["prompt", "completion", column])
    else:
        rows = tokenized(worked, inputs.tokenizer, inputs.recipe.toolbox.functions(), template_options(cfg),
                         cfg.model.max_seq_length)
    trainer = SFTTrainer(model=inputs.model, processing_class=inputs.tokenizer, args=args, train_dataset=rows,
                         callbacks=callbacks)
    use_step_lines(trainer, name)
    trainer.train()
    return trainer
