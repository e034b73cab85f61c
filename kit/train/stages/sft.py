"""The SFT warm start (stage `sft`): supervised steps on the recipe's worked answers before GRPO.

Unsloth's Qwen3 GRPO notebook calls it format priming: a model that already answers in the required
format gets rewards that differ between completions from GRPO's first step. The recipe supplies the
target text per row with `sft_target(row) -> str`; TRL's SFTTrainer trains on the completion only.
"""

from __future__ import annotations

from pathlib import Path

from kit.config import RunConfig
from kit.errors import KitError
from kit.recipe import Recipe


def sft_dataset(recipe: Recipe, rows):
    """Prompt-completion rows in chat format: the prompt as is, the worked answer as the assistant turn."""
    if recipe.sft_target is None:
        raise KitError(f"stages has sft, but recipe '{recipe.name}' defines no sft_target(row) -> str to learn from")
    return rows.map(lambda row: {"completion": [{"role": "assistant", "content": recipe.sft_target(row)}]})


def sft_args(cfg: RunConfig, out: Path):
    from trl import SFTConfig

    s = cfg.sft
    known = set(SFTConfig.__dataclass_fields__)
    unknown = sorted(set(s.extra) - known)
    if unknown:
        raise KitError(f"sft.extra.{unknown[0]}: not an SFTConfig setting in this TRL version")
    return SFTConfig(
        output_dir=str(out / "checkpoints-sft"),
        seed=cfg.seed,
        save_strategy="no",  # a warm start of minutes; the run saves after the last stage
        report_to=cfg.grpo.report_to,
        max_length=cfg.model.max_seq_length,
        **s.model_dump(exclude={"extra"}),
        **s.extra,
    )


def run_sft(cfg: RunConfig, recipe: Recipe, model, tokenizer, rows, args, out: Path, stopper=None):
    """Train the warm start in place; returns the trainer (its save_model gathers sharded weights)."""
    from trl import SFTTrainer

    from kit.monitor.metrics import MetricsFile

    per_step = cfg.sft.per_device_train_batch_size * cfg.sft.gradient_accumulation_steps * cfg.launch.num_processes
    print(f"sft: {cfg.sft.max_steps} steps of {per_step} worked answers, learning rate {cfg.sft.learning_rate:g}")
    trainer = SFTTrainer(model=model, processing_class=tokenizer, args=args, train_dataset=sft_dataset(recipe, rows),
                         callbacks=[MetricsFile(out / "metrics.jsonl", stage="sft")] + ([stopper] if stopper else []))
    trainer.train()
    return trainer
