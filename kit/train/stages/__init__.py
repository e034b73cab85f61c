"""The training stages, in the order `stages` lists them: each module has `arguments()` (built and checked
before loading) and `train()`. A new stage is one module here plus one line in STAGES."""

from kit.train.stages import grpo, sft

STAGES = {"sft": sft, "grpo": grpo}
