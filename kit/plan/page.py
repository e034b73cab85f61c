"""The plan as a page: the settings, the terms with why each is there, the verdict, and what would fit.

    print(describe(make_plan(cfg, shape, "T4", 15.0)))
"""

from __future__ import annotations

from kit.config import RunConfig
from kit.plan.memory import sequence_length
from kit.plan.planner import (
    Plan,
    static_beyond_vllm,
    suggested_utilization,
    training_beyond_vllm,
    vllm_asleep_gib,
    vllm_share_gib,
)
from kit.plan.shapes import ModelShape
from kit.plan.vllm_share import standby_applies


def settings_line(plan: Plan) -> str:
    cfg, shape = plan.cfg, plan.shape
    m, g = cfg.model, cfg.grpo
    pictures = f" + {shape.image_tokens} image" if shape.image_tokens else ""
    weights = ("full fine-tuning" if m.full_finetuning
               else f"{'4-bit' if m.load_in_4bit else '16-bit'} + LoRA r={m.lora_rank}")
    standby = " in standby" if standby_applies(cfg, shape.vision is not None) else ""
    generation = f"vLLM share {plan.vllm_utilization:.3g}{standby}" if m.fast_inference else "generate() without vLLM"
    return (f"{weights}; {g.per_device_train_batch_size} completions per device step "
            f"({g.num_generations} generations) x {sequence_length(cfg, shape)} tokens "
            f"({cfg.data.max_prompt_length} prompt{pictures} + {g.max_completion_length} completion); "
            f"checkpointing {m.gradient_checkpointing}; {g.optim}; {generation}")


def processes_lines(cfg: RunConfig) -> list[str]:
    """A run of several processes: this plan is one GPU's; what one optimizer step holds across all of them."""
    launch, generations = cfg.launch, cfg.grpo.num_generations
    if not launch.several_processes:
        return []
    machines = launch.num_machines or 1
    across = f"{machines} machines x {launch.num_processes}" if machines > 1 else "on this machine"
    completions = cfg.completions_per_step
    return [f"  one GPU of {launch.total_processes} processes ({across}): each optimizer step holds {completions} "
            f"completions across them ({completions // generations} prompts x {generations} generations)"]


def picture_lines(shape: ModelShape) -> list[str]:
    """What the plan knows of a vision-language model's pictures: how they become tokens, and how many it counted."""
    if not shape.vision:
        return []
    counted = (f"{shape.image_tokens} image tokens in each prompt, counted" if shape.image_tokens else
               "their image tokens are not counted: give the pictures' size (kit plan --image-size WxH, or the "
               "recipe's PICTURE_SIZE)")
    return [f"  pictures: {shape.vision.sizing}; {counted}"]


def describe(plan: Plan) -> str:
    cfg, shape = plan.cfg, plan.shape
    kind = shape.vision.model_type if shape.vision else shape.model_type
    lines = [f"memory plan: {cfg.model.name} ({shape.all_params / 1e9:.2f}B parameters, {kind}) "
             f"on {plan.gpu} ({plan.gpu_gib:.1f} GiB)",
             f"  {settings_line(plan)}",
             *processes_lines(cfg),
             *picture_lines(shape),
             *[f"  not counted: {note}" for note in shape.left_out], "",
             f"  {'term':<26} {'GiB':>7}  {'phase':<10} why"]
    for term in plan.estimate.terms:
        lines.append(f"  {term.name:<26} {term.gib:>7.2f}  {term.phase:<10} {term.why}")
    phases = "largest of generation, scoring" if plan.reward_terms else "larger of generation"
    lines.append(f"  {'needed at least':<26} {plan.estimate.peak_gib:>7.2f}  static + the {phases} and training")
    if cfg.model.fast_inference:
        lines.append(f"  {'on this GPU':<26} {plan.peak_gib:>7.2f}  {on_this_gpu(plan)}")
    lines += ["", f"verdict: {plan.verdict}: {plan.peak_gib:.1f} of {plan.gpu_gib:.1f} GiB "
                  f"({plan.peak_gib / plan.gpu_gib:.0%}); the estimate is good to about +-25%"]
    lines += [f"  problem: {p}" for p in plan.problems]
    lines += [f"  note: {n}" for n in plan.notes]
    lines += ["", "largest that fits on this GPU (one setting at a time, the others as they are):"]
    lines += [f"  {p}" for p in plan.proposals]
    if cfg.model.fast_inference and not plan.problems and not standby_applies(cfg, shape.vision is not None):
        lines += ["", vllm_share_line(plan)]  # in standby Unsloth sets the share
    return "\n".join(lines)


def on_this_gpu(plan: Plan) -> str:
    """How the peak on this GPU is made up: vLLM's share and training beside it, or in standby two moments."""
    share = vllm_share_gib(plan.vllm_utilization, plan.estimate, plan.gpu_gib)
    if not standby_applies(plan.cfg, plan.shape.vision is not None):
        return f"vLLM's share {share:.2f} + training beside it {training_beyond_vllm(plan.estimate):.2f}"
    return (f"the larger of generating (vLLM's share {share:.2f} + {static_beyond_vllm(plan.estimate):.2f} beside "
            f"it) and training in standby (vLLM without its KV cache {vllm_asleep_gib(plan.estimate):.2f} + "
            f"training {training_beyond_vllm(plan.estimate):.2f})")


def vllm_share_line(plan: Plan) -> str:
    cfg = plan.cfg
    util = suggested_utilization(cfg, plan.shape, plan.estimate, plan.gpu_gib)
    return (f"vLLM's share: gpu_memory_utilization {util} holds the whole generation batch at once and leaves "
            f"training its room (now {plan.vllm_utilization:.4g})")
