"""What the memory probe's step says: about the GPU it ran on (fits or stops the run), about the GPU `--gpu` named
when that is another one, and in run.yaml's `memory_probe` section.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import KitError
from kit.outputs import write_run_section
from kit.plan.vllm_share import STANDBY_COUNTING, standby_applies, vllm_utilization

FITS_UNDER = 0.95  # of the GPU's memory: the rest is fragmentation a long run meets and one step may not
SAME_GPU = 0.03  # --gpu names the GPU here when their memory differs by less than this share


@dataclass
class ProbeResult:
    prompts: int  # distinct prompts, each num_generations times
    prompt_tokens: int  # the longest prompt
    completion_tokens: int  # the shortest completion (max_completion_length when every one ran to the cap)
    peak_gib: float  # GPU: the largest phase's, on the device; CPU: peak RSS so far
    optimizer_gib: float  # Adam's moments, not yet allocated before the first step: counted, not measured
    device: str
    phases_gib: dict = field(default_factory=dict)  # GPU: generation / scoring / training, each on the device
    gpu_gib: float | None = None  # the memory of the GPU the step ran on; None on a CPU

    @property
    def total_gib(self) -> float:
        return self.peak_gib + self.optimizer_gib


def report(result: ProbeResult, plan, run_file: Path) -> None:
    """The line, run.yaml's `memory_probe` section, and a stop when the GPU the step ran on cannot hold it."""
    shapes = (f"{result.prompts} prompt{'s' * (result.prompts != 1)} of up to {result.prompt_tokens} tokens x "
              f"{result.completion_tokens}-token completions")
    section = {"device": result.device, "prompts": result.prompts, "prompt_tokens": result.prompt_tokens,
               "completion_tokens": result.completion_tokens, "measured_peak_gib": round(result.peak_gib, 3),
               "optimizer_state_gib": round(result.optimizer_gib, 3)}
    section |= {f"measured_{phase}_gib": round(gib, 3) for phase, gib in result.phases_gib.items()}
    if result.gpu_gib is None:  # a CPU: the shapes and the resident set, nothing to fit
        if plan is not None:
            section["estimated_peak_gib"] = round(plan.peak_gib, 2)
        write_run_section(run_file, "memory_probe", section)
        print(f"memory probe: {shapes}; peak resident set {result.peak_gib:.1f} GiB (CPU)")
        return
    here = plan if plan is not None and same_gpu(plan.gpu_gib, result.gpu_gib) else None
    fits = result.total_gib <= FITS_UNDER * result.gpu_gib
    section |= {"gpu_gib": round(result.gpu_gib, 2), "fits": fits}
    if here is not None:
        section["estimated_peak_gib"] = round(here.peak_gib, 2)
    if standby := standby_counted(plan):
        section["vllm_standby"] = standby
    elsewhere = other_gpu_line(result, plan) if plan is not None and here is None else None
    if elsewhere:
        section["named_gpu"] = {"gpu": plan.gpu, "gpu_gib": round(plan.gpu_gib, 2),
                                "estimated_peak_gib": round(plan.peak_gib, 2), "what_the_probe_tells": elsewhere}
    write_run_section(run_file, "memory_probe", section)
    planned = f"plan {here.peak_gib:.1f} GiB, " if here is not None else ""
    said = f"{planned}probe {result.total_gib:.1f} GiB of {result.gpu_gib:.1f} ({shapes})"
    if not fits:
        raise KitError(f"memory probe: {said}: does not fit {result.device} (at most {FITS_UNDER:.0%} of it). "
                       f"Nothing was trained. {advice(here)}")  # the plan's proposals are for the GPU it planned
    print(f"memory probe: {said}: fits {result.device}")
    if elsewhere:
        print(f"memory probe: {elsewhere}")


def same_gpu(planned_gib: float, here_gib: float) -> bool:
    return abs(planned_gib - here_gib) <= SAME_GPU * here_gib


def standby_counted(plan) -> str | None:
    if plan is None or not plan.cfg.model.fast_inference:
        return None
    return STANDBY_COUNTING if standby_applies(plan.cfg, plan.shape.vision is not None) else None


def other_gpu_line(result: ProbeResult, plan) -> str:
    """What a step measured on this GPU says about the one --gpu named: all of it without vLLM (no term depends on
    the GPU's size); with vLLM only the part beside vLLM's share, as that share is a fraction of each GPU."""
    named = f"--gpu {plan.gpu} ({plan.gpu_gib:.1f} GiB) is not the GPU here ({result.device}, {result.gpu_gib:.1f})"
    if not plan.cfg.model.fast_inference:
        verdict = "would fit" if result.total_gib <= FITS_UNDER * plan.gpu_gib else "would not fit"
        return (f"{named}: this step's {result.total_gib:.1f} GiB {verdict} it (no vLLM: nothing in the step "
                "depends on the GPU's size)")
    vision = plan.shape.vision is not None
    # the share here is another GPU's than the plan's: worked out for this one's memory
    beside = result.total_gib - vllm_utilization(plan.cfg, result.gpu_gib, vision) * result.gpu_gib
    there = plan.vllm_utilization * plan.gpu_gib
    verdict = "would fit" if max(0.0, beside) + there <= FITS_UNDER * plan.gpu_gib else "would not fit"
    return (f"{named}: the probe measured {max(0.0, beside):.1f} GiB beside vLLM's share here; beside the "
            f"{plan.gpu}'s share ({there:.1f} GiB) that {verdict} it. vLLM's own part there (its weights and KV "
            f"cache) is the plan's estimate ({plan.peak_gib:.1f} GiB in all), not measured")


def advice(plan) -> str:  # the plan's proposals (each a setting that fits on its own), else what sizes the step
    if plan is not None and plan.proposals:
        return "; ".join(plan.proposals)
    return "Lower grpo.max_completion_length, grpo.num_generations or data.max_prompt_length"
