"""The SFT warm start (stage `sft`): supervised steps on the recipe's worked answers before GRPO.

Unsloth's Qwen3 GRPO notebook calls it format priming: a model that already answers in the required
format gets rewards that differ between completions from GRPO's first step. The recipe supplies the
target text per row with `sft_target(row) -> str`; TRL's SFTTrainer trains on the completion only.
"""

from __future__ import annotations

from kit.config import RunConfig
from kit.errors import KitError
from kit.outputs import RunDir
from kit.recipe import Recipe
from kit.train.stages.contract import StageInputs
from kit.train.stages.settings import CHECKPOINTING_SET_BY, checked_extra, checkpointing

# What the kit sets in SFTConfig itself, and where the user changes it instead.
KIT_SETS = {"output_dir": "--out", "seed": "the top-level setting seed", "save_strategy": "the run (it saves "
            "after the last stage)", "report_to": "grpo.report_to", "max_length": "model.max_seq_length",
            **CHECKPOINTING_SET_BY}


def sft_dataset(recipe: Recipe, rows):
    """Prompt-completion rows in chat format: the prompt as is, the worked answer as the completion.

    A target is the assistant's text, or (with tools) the completion's messages; the tools' schemas go with
    each row, so the warm start sees the prompt GRPO will (TRL's SFTTrainer renders a `tools` column)."""
    if recipe.sft_target is None:
        raise KitError(f"stages has sft, but recipe '{recipe.name}' defines no sft_target(row) -> str to learn from")
    tools = schemas_json(recipe.toolbox.functions()) if recipe.toolbox else None

    def worked(row: dict) -> dict:
        target = recipe.sft_target(row)
        completion = target if isinstance(target, list) else [{"role": "assistant", "content": target}]
        return {"completion": completion, **({"tools": tools} if tools else {})}

    return rows.map(worked)


def schemas_json(functions: list) -> str:
    """The tools as JSON schemas in one string: rows of an Arrow table cannot hold schemas of different shapes."""
    import json

    from transformers.utils import get_json_schema

    return json.dumps([get_json_schema(fn) for fn in functions])


def arguments(inputs: StageInputs):
    sft_dataset(inputs.recipe, inputs.rows.select(range(1)))  # the recipe must know how to write a worked answer
    return sft_args(inputs.cfg, inputs.out)


def sft_args(cfg: RunConfig, out: RunDir):
    from trl import SFTConfig

    s = cfg.sft
    extra = checked_extra("sft", s.extra, SFTConfig, KIT_SETS)
    return SFTConfig(
        output_dir=str(RunDir(out).sft_checkpoints),
        seed=cfg.seed,
        save_strategy="no",  # a warm start of minutes; the run saves after the last stage
        report_to=cfg.grpo.report_to,
        max_length=cfg.model.max_seq_length,
        **checkpointing(cfg),
        **s.model_dump(exclude={"extra"}),
        **extra,
    )


def train(inputs: StageInputs, args, stopper=None):
    """Train the warm start in place; returns the trainer (its save_model gathers sharded weights)."""
    from trl import SFTTrainer

    from kit.monitor.console import use_step_lines
    from kit.monitor.finite import FiniteGuard
    from kit.monitor.metrics import MetricsFile
    from kit.monitor.pace import StepPace

    cfg, out = inputs.cfg, inputs.out
    per_step = cfg.sft.per_device_train_batch_size * cfg.sft.gradient_accumulation_steps * cfg.launch.num_processes
    print(f"sft: {cfg.sft.max_steps} steps of {per_step} worked answers, learning rate {cfg.sft.learning_rate:g}")
    callbacks = [MetricsFile(out.metrics, stage="sft"), FiniteGuard("sft", cfg.sft.learning_rate), StepPace()]
    callbacks += [stopper] if stopper else []
    trainer = SFTTrainer(model=inputs.model, processing_class=inputs.tokenizer, args=args,
                         train_dataset=sft_dataset(inputs.recipe, inputs.rows), callbacks=callbacks)
    use_step_lines(trainer, "sft")
    trainer.train()
    return trainer
