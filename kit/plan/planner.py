"""Whether a run fits a GPU, before anything is loaded, and the largest settings that would.

    python -m kit plan gsm8k --model unsloth/Qwen2.5-1.5B-Instruct --gpu T4

With vLLM, memory splits in two: vLLM takes gpu_memory_utilization x the GPU up front (the weights it
shares with training, its activations, and KV cache in all that is left), and training gets the rest.
Both halves must fit, so a plan checks both and proposes a utilization that leaves each enough.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kit.config import RunConfig
from kit.plan.gpus import GIB, gpu_problem, vllm_notes
from kit.plan.memory import (
    Estimate,
    Stack,
    Term,
    estimate_memory,
    generation_sequences,
    kv_cache_bytes_per_token,
    sequence_length,
)
from kit.plan.shapes import ModelShape
from kit.plan.vllm_share import standby_applies, standby_notes, vllm_utilization

FITS, TIGHT, NO_FIT = "fits", "tight", "does not fit"
HEADROOM = 0.9  # below 90% of the GPU: fits; the estimate is good to about +-25% on published setups
CLEAR_MISS = 1.1  # above 110%: clearly does not fit, and `kit train` refuses it
MAX_UTILIZATION = 0.95  # the most of a GPU worth giving vLLM: CUDA and the trainer need the rest
VLLM_KV_CACHE = "vLLM KV cache (minimum)"
VLLM_TERMS = ("CUDA context", "weights", "vLLM weights (second copy)", "vLLM activations", "vLLM CUDA graphs",
              VLLM_KV_CACHE)


@dataclass
class Plan:
    cfg: RunConfig
    shape: ModelShape
    gpu: str
    gpu_gib: float
    estimate: Estimate
    peak_gib: float  # predicted peak on this GPU with these settings
    vllm_utilization: float  # the share of this GPU vLLM takes (kit.plan.vllm_share), worked out once per plan
    problems: list[str] = field(default_factory=list)
    proposals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the user should know, that does not change the verdict
    reward_terms: tuple[Term, ...] = ()  # the reward models' (kit.plan.reward_models): the same for any settings

    @property
    def verdict(self) -> str:
        if self.problems or self.peak_gib > CLEAR_MISS * self.gpu_gib:
            return NO_FIT
        return FITS if self.peak_gib <= HEADROOM * self.gpu_gib else TIGHT

    @property
    def refused(self) -> bool:
        return self.verdict == NO_FIT


def vllm_share_needed(estimate: Estimate) -> float:
    """What vLLM's share must hold before it can start: everything it owns plus one sequence of cache."""
    return sum(t.gib for t in estimate.terms if t.name in VLLM_TERMS)


def static_beyond_vllm(estimate: Estimate) -> float:
    """What stays on the GPU the whole run outside vLLM's share: trainable state, a reward model's weights."""
    return sum(t.gib for t in estimate.terms if t.phase == "static" and t.name not in VLLM_TERMS)


def training_beyond_vllm(estimate: Estimate) -> float:
    """What training needs outside vLLM's share: its trainable state, a reward model, and its largest phase."""
    return static_beyond_vllm(estimate) + estimate.largest_phase


def vllm_share_gib(utilization: float, estimate: Estimate, gpu_gib: float) -> float:
    """What vLLM holds while it generates: its share of the GPU, or what it must have when the share is less."""
    return max(utilization * gpu_gib, vllm_share_needed(estimate))


def vllm_asleep_gib(estimate: Estimate) -> float:
    """What vLLM keeps while it sleeps in standby: everything but its KV cache, which Unsloth releases after each
    generation (unsloth_zoo's sleep unmaps all but the shared weights), before the rewards score and training runs."""
    return vllm_share_needed(estimate) - estimate.term(VLLM_KV_CACHE).gib


def peak_on_gpu(cfg: RunConfig, shape: ModelShape, estimate: Estimate, gpu_gib: float, utilization: float
                ) -> float:
    """The GPU's peak. With vLLM, its share and training side by side; in standby the larger of generating (the
    whole share awake) and training (vLLM asleep, its KV cache released)."""
    if not cfg.model.fast_inference:
        return estimate.peak_gib
    share = vllm_share_gib(utilization, estimate, gpu_gib)
    if not standby_applies(cfg, shape.vision is not None):
        return share + training_beyond_vllm(estimate)
    return max(share + static_beyond_vllm(estimate), vllm_asleep_gib(estimate) + training_beyond_vllm(estimate))


def assess(cfg: RunConfig, shape: ModelShape, gpu: str, gpu_gib: float, stack: Stack = "unsloth",
           reward_terms: tuple[Term, ...] = ()) -> Plan:
    """The estimate, the peak on this GPU and its problems: everything a verdict needs, no proposals."""
    estimate = estimate_memory(cfg, shape, stack, reward_terms)
    utilization = vllm_utilization(cfg, gpu_gib, shape.vision is not None)  # the one place a plan works it out
    plan = Plan(cfg, shape, gpu, gpu_gib, estimate, peak_on_gpu(cfg, shape, estimate, gpu_gib, utilization),
                utilization, reward_terms=reward_terms)
    plan.problems += [problem] if (problem := gpu_problem(gpu)) else []
    if cfg.model.fast_inference:
        plan.problems += vllm_share_problems(cfg, shape, estimate, gpu_gib, utilization)
        plan.notes += vllm_notes(gpu) + standby_notes(cfg, utilization, shape.vision is not None)
    return plan


def make_plan(cfg: RunConfig, shape: ModelShape, gpu: str, gpu_gib: float, stack: Stack = "unsloth",
              reward_terms: tuple[Term, ...] = ()) -> Plan:
    plan = assess(cfg, shape, gpu, gpu_gib, stack, reward_terms)
    plan.proposals = proposals(plan, stack)
    return plan


def round_up(value: float, step: float = 0.05) -> float:
    return round(math.ceil(value / step - 1e-9) * step, 2)


def vllm_share_problems(cfg: RunConfig, shape: ModelShape, estimate: Estimate, gpu_gib: float, util: float
                        ) -> list[str]:
    vision = shape.vision is not None
    share, needed, rest = util * gpu_gib, vllm_share_needed(estimate), training_beyond_vllm(estimate)
    problems = []
    if needed > MAX_UTILIZATION * gpu_gib:
        problems.append(f"vLLM alone needs {needed:.1f} GiB (the weights, its activations and one sequence of KV "
                        f"cache), more than it can take of this GPU ({MAX_UTILIZATION} x {gpu_gib:.1f} GiB): "
                        + smaller_weights_advice(cfg))
    elif share < needed:
        problems.append(f"vLLM's share ({util:.2f} x {gpu_gib:.1f} = {share:.1f} GiB) cannot hold the weights, its "
                        f"activations and one sequence of KV cache ({needed:.1f} GiB): raise "
                        f"model.gpu_memory_utilization to {round_up(needed / gpu_gib)}")
    # in standby Unsloth sets the share itself, and training runs beside vLLM without its KV cache
    if not standby_applies(cfg, vision) and share + rest > CLEAR_MISS * gpu_gib and needed + rest <= HEADROOM * gpu_gib:
        problems.append(f"training needs {rest:.1f} GiB beside vLLM's share, and {gpu_gib - share:.1f} GiB is left: "
                        f"lower model.gpu_memory_utilization to {suggested_utilization(cfg, shape, estimate, gpu_gib)}")
    return problems


def smaller_weights_advice(cfg: RunConfig) -> str:
    first = "" if cfg.model.load_in_4bit else "load the weights in 4-bit (model.load_in_4bit=true), "
    return f"{first}generate without vLLM (model.fast_inference=false), or choose a smaller model or a larger GPU"


def suggested_utilization(cfg: RunConfig, shape: ModelShape, estimate: Estimate, gpu_gib: float) -> float:
    """vLLM's share for the whole generation batch at once, capped to leave training its room."""
    batch_kv = generation_sequences(cfg) * sequence_length(cfg, shape) * kv_cache_bytes_per_token(shape) / GIB
    wanted = vllm_share_needed(estimate) + batch_kv
    ceiling = (HEADROOM * gpu_gib - training_beyond_vllm(estimate)) / gpu_gib
    low = vllm_share_needed(estimate) / gpu_gib
    return min(MAX_UTILIZATION, round_up(min(max(wanted / gpu_gib, low), max(ceiling, low))))


# --- the largest settings that fit ----------------------------------------------------------------


def fits(cfg: RunConfig, shape: ModelShape, gpu_gib: float, stack: Stack, reward_terms: tuple[Term, ...] = ()) -> bool:
    return assess(cfg, shape, "", gpu_gib, stack, reward_terms).verdict == FITS


def with_settings(cfg: RunConfig, **grpo) -> RunConfig:
    """A copy of cfg with other GRPO settings, growing max_seq_length when completions need it."""
    g = cfg.grpo.model_copy(update=grpo)
    seq = max(cfg.model.max_seq_length, cfg.data.max_prompt_length + g.max_completion_length)
    return cfg.model_copy(update={"grpo": g, "model": cfg.model.model_copy(update={"max_seq_length": seq})})


def largest(candidates: list, build, plan: Plan, stack: Stack):
    """The last candidate (in increasing order) whose config fits plan's GPU; memory grows with each."""
    best = None
    for value in candidates:
        if not fits(build(value), plan.shape, plan.gpu_gib, stack, plan.reward_terms):
            break
        best = value
    return best


def proposals(plan: Plan, stack: Stack) -> list[str]:
    cfg = plan.cfg
    g = cfg.grpo
    prompts = max(1, g.per_device_train_batch_size // g.num_generations)
    lines = []
    gens = largest([2, 4, 6, 8, 12, 16, 24, 32, 48, 64],
                   lambda n: with_settings(cfg, num_generations=n, per_device_train_batch_size=n * prompts),
                   plan, stack)
    lines.append(f"num_generations: up to {gens} ({prompts} prompt(s) per device step)" if gens
                 else "num_generations: even 2 does not fit with the other settings")
    lengths = largest([64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384],
                      lambda n: with_settings(cfg, max_completion_length=n), plan, stack)
    lines.append(f"max_completion_length: up to {lengths}" if lengths
                 else "max_completion_length: even 64 tokens does not fit with the other settings")
    lines.append(batch_proposal(plan, stack))
    return [*four_bit_proposal(plan, stack), *lines]


def four_bit_proposal(plan: Plan, stack: Stack) -> list[str]:
    """A 16-bit LoRA run that does not fit: would the same run in 4-bit?"""
    cfg = plan.cfg
    if plan.verdict == FITS or cfg.model.load_in_4bit or cfg.model.full_finetuning:
        return []
    four_bit = cfg.model_copy(update={"model": cfg.model.model_copy(update={"load_in_4bit": True})})
    trial = assess(four_bit, plan.shape, plan.gpu, plan.gpu_gib, stack, plan.reward_terms)
    if trial.verdict != FITS:
        return [f"load_in_4bit: true would not be enough either ({trial.peak_gib:.1f} GiB)"]
    return [f"load_in_4bit: true fits, about {trial.peak_gib:.1f} of {plan.gpu_gib:.1f} GiB (QLoRA: 4-bit weights, "
            f"16-bit LoRA; the change that fits this model here)"]


def batch_proposal(plan: Plan, stack: Stack) -> str:
    """The largest per-device batch that fits, keeping completions per step a multiple of num_generations."""
    cfg = plan.cfg
    g = cfg.grpo
    per_step = g.per_device_train_batch_size * g.gradient_accumulation_steps
    options = [b for b in range(1, 8 * per_step + 1) if per_step % b == 0 or b % per_step == 0]
    build = lambda b: with_settings(cfg, per_device_train_batch_size=b,  # noqa: E731
                                    gradient_accumulation_steps=max(1, per_step // b))
    best = largest(options, build, plan, stack)
    if best is None:
        return "per_device_train_batch_size: even 1 completion per device step does not fit"
    accumulation = max(1, per_step // best)
    return (f"per_device_train_batch_size: up to {best} with gradient_accumulation_steps {accumulation} "
            f"({best * accumulation} completions per step)")


# --- what the user reads --------------------------------------------------------------------------
