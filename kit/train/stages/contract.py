"""What a training stage is given (StageInputs) and what it offers the run (Stage)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kit.config import RunConfig
from kit.config.stages import StagePlan
from kit.outputs import RunDir
from kit.recipe import Recipe
from kit.rewards.bundle import RewardBundle


@dataclass(frozen=True)
class StageInputs:
    """What a stage is given. Before loading (for `arguments`) the fields from `model` on are None."""

    cfg: RunConfig
    recipe: Recipe
    rewards: RewardBundle  # the recipe's, reweighted by the config
    out: RunDir
    rows: Any  # the training rows (a datasets.Dataset); once loaded, without the prompts that are too long
    model: Any = None
    tokenizer: Any = None
    checkpoint: Path | None = None  # the GRPO checkpoint a resumed run continues from
    plan: Any = None  # the memory plan (kit.plan), when one was made: the real peak goes beside it
    stage: StagePlan | None = None  # which entry of `stages` this is (None: the run's only stage of its kind)
    held_out: Any = None  # kit.train.evaluation.HeldOutEvaluations: GRPO's held-out checks while it trains

    @property
    def name(self) -> str:
        """A GRPO stage's name in metrics, console lines and the held-out table (grpo, grpo-2, format...)."""
        return self.stage.name if self.stage else "grpo"

    @property
    def checkpoints(self) -> Path:
        """Where this GRPO stage saves its checkpoints (and a resumed run finds them)."""
        return self.out.stage_checkpoints(self.stage.checkpoint_folder if self.stage else None)


class Stage(Protocol):
    def arguments(self, inputs: StageInputs) -> Any:
        """TRL's config for the stage, built (and so checked) before anything is loaded."""

    def train(self, inputs: StageInputs, args, stopper) -> Any:
        """Train inputs.model in place with `args`, stopping when `stopper` says so; returns the trainer."""
