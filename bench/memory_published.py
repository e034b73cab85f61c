"""The memory planner against published figures: each setup as its source ran it, the estimate beside it.

    .venv/bin/python bench/memory_published.py

Architectures come from each model's config.json (bench/model_configs/, the fields the planner reads);
settings from the notebooks and posts named in `source`. Prints estimate / published for each, and the
estimator's own breakdown. Sizes in GiB; the sources' "GB" are GiB where their arithmetic shows it
(the long-context table's 78.3 and 2.5 come out exactly in GiB).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kit.config import build_config
from kit.plan.gpus import GPUS
from kit.plan.memory import Stack
from kit.plan.planner import make_plan
from kit.plan.shapes import read_shape

CONFIGS = Path(__file__).parent / "model_configs"
LAUNCH = "unsloth.ai/blog/r1-reasoning (Feb 2025)"
LONG_CONTEXT = "unsloth.ai/blog/grpo (Feb 2025), VRAM table"

# The launch notebooks' GRPO settings (Llama 3.1 8B and Qwen2.5 3B notebooks, logs of 2025-02-06):
# 256 prompt + 200 completion tokens, 8-bit paged Adam, one prompt per step.
LAUNCH_GRPO = {"max_completion_length": 200, "optim": "paged_adamw_8bit", "beta": 0.04}
LONG = {  # Llama 3.1 8B, 20K (20480) tokens, 8 generations, 16-bit LoRA (the table counts a 16 GB weight copy)
    "model": {"max_seq_length": 20480, "load_in_4bit": False, "lora_rank": 32, "lora_alpha": 32},
    "grpo": {"per_device_train_batch_size": 8, "num_generations": 8, "max_completion_length": 20480 - 256},
}


@dataclass
class Published:
    claim: str
    source: str
    model: str
    published_gib: float
    settings: dict
    measure: str = "on_gpu"  # on_gpu: the run on `gpu` with its vLLM share; needed: the sum of the terms
    bound: bool = False  # "fits in N GB": the estimate must not exceed it
    stack: Stack = "unsloth"
    gpu: str = "T4"
    why: str = ""
    overrides: dict = field(default_factory=dict)

    def config(self):
        layers = [{"data": {"max_prompt_length": 256}}, self.settings, {"model": {"name": str(CONFIGS / self.model)}}]
        return build_config(layers)

    def estimate(self) -> float:
        plan = make_plan(self.config(), read_shape(str(CONFIGS / self.model)), self.gpu, GPUS[self.gpu], self.stack)
        return plan.peak_gib if self.measure == "on_gpu" else plan.estimate.peak_gib

    def ratio(self, estimate: float) -> float:
        return estimate / self.published_gib


PUBLISHED = [
    Published(
        "Qwen2.5 1.5B GRPO in 7 GB", LAUNCH, "Qwen2.5-1.5B-Instruct", 7.0,
        {"model": {"max_seq_length": 1024, "lora_rank": 64, "lora_alpha": 64, "gpu_memory_utilization": 0.5},
         "grpo": {"per_device_train_batch_size": 8, "num_generations": 8, **LAUNCH_GRPO}},
        why="settings of the launch's Qwen2.5 notebook (r=64, 8 generations, vLLM share 0.5) on a T4",
    ),
    Published(
        "Llama 3.1 8B GRPO within 15 GB", LAUNCH, "Llama-3.1-8B-Instruct", 15.0,
        {"model": {"max_seq_length": 512, "lora_rank": 32, "lora_alpha": 32, "gpu_memory_utilization": 0.6},
         "grpo": {"per_device_train_batch_size": 6, "num_generations": 6, **LAUNCH_GRPO}},
        bound=True, why="the launch's Llama 3.1 8B notebook on a T4 (r=32, 6 generations, vLLM share 0.6)",
    ),
    Published(
        "models up to ~15B within 15 GB: Phi-4 (14.7B)", LAUNCH, "phi-4", 15.0,
        {"model": {"max_seq_length": 512, "lora_rank": 16, "lora_alpha": 16, "gpu_memory_utilization": 0.7,
                   "target_modules": ["gate_proj", "up_proj", "down_proj"]},
         "grpo": {"per_device_train_batch_size": 6, "num_generations": 6, **LAUNCH_GRPO}},
        bound=True, why="the launch's Phi-4 notebook on a T4 (MLP-only LoRA r=16, vLLM share 0.7); GRPO settings as "
            "the Llama notebook of the same launch",
    ),
    Published(
        "Llama 3.1 8B, 20K context, 8 generations: Unsloth 54.3 GB", LONG_CONTEXT, "Llama-3.1-8B-Instruct", 54.3,
        LONG, measure="needed", gpu="H200", why="the sum of the terms (the table is a requirement, not a GPU)",
    ),
    Published(
        "same setup, TRL + FlashAttention 2: 510.8 GB", LONG_CONTEXT, "Llama-3.1-8B-Instruct", 510.8,
        LONG, measure="needed", stack="trl", gpu="H200",
        why="plain TRL with gradient checkpointing on the GPU, all logits at once, a second weight copy in vLLM",
    ),
]

# Weights as vLLM logged them loading Unsloth's bnb-4bit uploads on a T4 (the notebooks' saved output).
MEASURED_WEIGHTS = [
    ("Llama-3.1-8B-Instruct", 5.35, "nb/Llama3.1_(8B)-GRPO.ipynb, log of 2025-02-06"),
    ("phi-4", 8.49, "nb/Phi_4_(14B)-GRPO.ipynb, log of 2025-02-06"),
    ("Qwen2.5-3B-Instruct", 2.22, "nb/Qwen2.5_(3B)-GRPO.ipynb, log of 2025-02-06"),
]


def weights_estimate(model: str) -> float:
    from kit.plan.memory import model_weights

    return model_weights(read_shape(str(CONFIGS / model)), load_in_4bit=True).gib


def main() -> None:
    print(f"{'published claim':<58} {'published':>9} {'estimate':>9} {'ratio':>6}  check")
    for p in PUBLISHED:
        estimate = p.estimate()
        ratio = p.ratio(estimate)
        ok = estimate <= p.published_gib if p.bound else abs(ratio - 1) <= 0.25
        rule = "<= bound" if p.bound else "+-25%"
        print(f"{p.claim:<58} {p.published_gib:>9.1f} {estimate:>9.1f} {ratio:>6.2f}  {rule}: {'yes' if ok else 'NO'}")
        print(f"    {p.why}; {p.source}")
    trl = PUBLISHED[-1]
    no_checkpoints = Published(trl.claim, trl.source, trl.model, trl.published_gib,
                               {**LONG, "model": {**LONG["model"], "gradient_checkpointing": "false"}},
                               measure="needed", stack="trl", gpu="H200")
    estimate = no_checkpoints.estimate()
    print(f"{'  the same without gradient checkpointing':<58} {'':>9} {estimate:>9.1f} "
          f"{no_checkpoints.ratio(estimate):>6.2f}  (the published figure lies between the two)")
    print(f"\n{'4-bit weights (vLLM log)':<58} {'measured':>9} {'estimate':>9} {'ratio':>6}")
    for model, measured, source in MEASURED_WEIGHTS:
        estimate = weights_estimate(model)
        print(f"{model:<58} {measured:>9.2f} {estimate:>9.2f} {estimate / measured:>6.2f}  ({source})")


if __name__ == "__main__":
    main()
