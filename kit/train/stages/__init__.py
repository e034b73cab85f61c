"""The training stages, in the order `stages` lists them. A stage is a module with the two functions of
kit.train.stages.contract.Stage; a new one is one module here plus one line in STAGES."""

from kit.train.stages import grpo, sft
from kit.train.stages.contract import Stage, StageInputs

STAGES: dict[str, Stage] = {"sft": sft, "grpo": grpo}
__all__ = ["STAGES", "Stage", "StageInputs"]
