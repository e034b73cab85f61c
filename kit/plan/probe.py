"""One GRPO step at the run's largest shapes before training: an out-of-memory found in the first minute.

`kit plan` estimates memory before anything loads; the probe checks that estimate on the real GPU. Before the
first optimizer step (grpo.memory_probe: on by default on a GPU) it builds the batch a late step can meet:
the longest prompts in the data (by tokens, after the length filter), each num_generations times, every
completion generated to max_completion_length. TRL's own generate, loss and backward run on it; the peak is
recorded in run.yaml beside the plan's estimate, and a peak the GPU cannot hold stops the run in one line.

Then the step is thrown away: the optimizer has not stepped, the gradients are dropped, and what the trainer
counts (its metrics, logged batches, token count, buffered batch) and the random number generators are put
back, so training goes on exactly as without the probe (tests/plan/test_probe.py: bit-identical weights).
No reward is called while TRL scores the batch (each completion scores 0: no judge asked, no reward's state moved;
the backward pass is the same size). A reward model is what the plan counts as the "scoring" phase, so the probe
loads every one the trainer calls and runs one forward pass at its largest shapes. A run with tools is not probed:
its rollouts act on environments.

The step is measured a phase at a time (generation, scoring, training), as the plan counts it, and the verdict is
about the GPU the step ran on: `--gpu` may name another one, of which the probe tells only what it can. In
standby vLLM sleeps after generating and has released its KV cache to the driver, but torch's reserved counters
still count it (its sleep allocator is a torch MemPool): the scoring and training phases leave it out.
"""

from __future__ import annotations

import copy
import random
import resource
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from transformers import TrainerCallback

from kit import env
from kit.errors import KitError
from kit.outputs import write_run_section
from kit.plan.gpus import GIB

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


def probe_applies(cfg) -> bool:
    """grpo.memory_probe as it applies here: null is on with a GPU, off on a CPU (where it takes minutes)."""
    return env.has_gpu() if cfg.grpo.memory_probe is None else cfg.grpo.memory_probe


class MemoryProbe(TrainerCallback):
    """Runs the probe at on_train_begin: the optimizer exists and the model is as the first step will see it."""

    def __init__(self, trainer, run_file: Path, plan=None, optim: str = "adamw_torch"):
        self.trainer, self.run_file, self.plan, self.optim = trainer, run_file, plan, optim
        self.result: ProbeResult | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        import torch

        print("memory probe: one step at the run's largest shapes before training (grpo.memory_probe=false skips it)")
        try:
            self.result = run_probe(self.trainer, self.optim)
        except torch.OutOfMemoryError as err:  # what the probe is for: said now, with the way out, not at step 120
            raise KitError(f"memory probe: one step at the run's largest shapes ran out of memory on "
                           f"{env.gpu_name() or 'the CPU'} ({str(err).splitlines()[0][:160]}). Nothing was trained. "
                           f"{advice(self.plan)}") from None
        report(self.result, self.plan, self.run_file)


def run_probe(trainer, optim: str) -> ProbeResult:
    from trl.trainer.utils import split_tensor_dict

    rows = largest_batch(trainer)
    kept = Kept.take(trainer)
    model, was_training = trainer.model, trainer.model.training
    model.train()
    phases = {}
    try:
        reset_peak()
        with full_length(trainer), zero_rewards(trainer):
            batch = trainer._generate_and_score_completions(rows)
        phases["generation"] = read_peak(asleep_now=vllm_asleep_bytes(trainer))
        if scorers := reward_model_scorers(trainer):
            reset_peak()
            for scorer in scorers:  # one after another, as TRL calls the rewards
                scorer.largest_pass()
            phases["scoring"] = read_peak(asleep_now=vllm_asleep_bytes(trainer), slept_through=True)
        step = split_tensor_dict(batch, trainer.args.steps_per_generation)[0]
        if not hasattr(trainer, "current_gradient_accumulation_steps"):  # the training loop sets it at each step
            trainer.current_gradient_accumulation_steps = trainer.args.gradient_accumulation_steps
        reset_peak()
        with trainer.compute_loss_context_manager():
            loss = trainer.compute_loss(model, step)
        trainer.accelerator.backward(loss)
        phases["training"] = read_peak(asleep_now=vllm_asleep_bytes(trainer), slept_through=True)
        result = ProbeResult(prompts=len(rows) // trainer.num_generations,
                             prompt_tokens=int(batch["prompt_mask"].sum(dim=1).max()),
                             completion_tokens=int(batch["completion_mask"].sum(dim=1).min()),
                             peak_gib=max(phases.values()), optimizer_gib=optimizer_gib(model, optim),
                             device=env.gpu_name() or "CPU", phases_gib=phases if env.has_gpu() else {},
                             gpu_gib=gpu_total_gib())
    finally:
        model.zero_grad(set_to_none=True)
        kept.put_back(trainer)
        model.train(was_training)
        reset_peak()  # run.yaml's measured peaks (kit.plan.record) are then the real steps', not the probe's
    return result


def reward_model_scorers(trainer) -> list:
    """The reward models of the rewards the trainer calls (kit.rewards.reward_model), each once."""
    from kit.rewards.traits import unwrapped

    scorers = [getattr(unwrapped(fn), "scorer", None) for fn in trainer.reward_funcs]
    return list({id(s): s for s in scorers if s is not None}.values())


def largest_batch(trainer) -> list[dict]:
    """The rows of one generation batch of this process: the longest prompts, each num_generations times in a row,
    as TRL's sampler repeats them."""
    from kit.data.rows import prompt_lengths

    dataset, groups = trainer.train_dataset, trainer.num_generations
    per_batch = trainer.args.generation_batch_size // trainer.accelerator.num_processes
    lengths = prompt_lengths(dataset, trainer.processing_class)
    longest = sorted(range(len(lengths)), key=lambda i: -lengths[i])[:max(1, per_batch // groups)]
    return [dataset[i] for i in longest for _ in range(groups)]


@contextmanager
def full_length(trainer):
    """Every completion runs to max_completion_length: the end of turn is held back until then, on TRL's
    transformers path (its generation kwargs and config) and its vLLM path (SamplingParams' min_tokens). Cut-off
    completions keep their tokens in the mask (grpo.mask_truncated_completions drops them: the same shapes)."""
    n, config = trainer.max_completion_length, getattr(trainer, "generation_config", None)
    masked, trainer.mask_truncated_completions = trainer.mask_truncated_completions, False
    held = [(getattr(trainer, "generation_kwargs", None), "min_new_tokens"),
            (getattr(getattr(trainer, "vllm_generation", None), "generation_kwargs", None), "min_tokens")]
    held = [(kwargs, key, kwargs.get(key)) for kwargs, key in held if isinstance(kwargs, dict)]
    before = getattr(config, "min_new_tokens", None)
    for kwargs, key, _ in held:
        kwargs[key] = n
    if config is not None:
        config.min_new_tokens = n
    try:
        yield
    finally:
        for kwargs, key, value in held:
            kwargs.pop(key) if value is None else kwargs.__setitem__(key, value)
        if config is not None:
            config.min_new_tokens = before
        trainer.mask_truncated_completions = masked


@contextmanager
def zero_rewards(trainer):
    """The trainer's rewards, while the probe scores, are ones that pay 0 to every completion."""
    real = trainer.reward_funcs
    trainer.reward_funcs = [pays_nothing] * len(real)
    try:
        yield
    finally:
        trainer.reward_funcs = real


def pays_nothing(prompts, completions, **kwargs) -> list[float]:
    return [0.0] * len(completions)


@dataclass
class Kept:
    """What one step changes in the trainer besides the weights' gradients: counted, logged, buffered, drawn."""
    metrics: dict
    logs: dict
    tokens_seen: int
    buffered: object
    rng: tuple

    @classmethod
    def take(cls, trainer) -> Kept:
        import numpy as np
        import torch

        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        return cls(copy.deepcopy(trainer._metrics), copy.deepcopy(trainer._logs), trainer.state.num_input_tokens_seen,
                   trainer._buffered_inputs, (random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda))

    def put_back(self, trainer) -> None:
        import numpy as np
        import torch

        trainer._metrics, trainer._logs = self.metrics, self.logs
        trainer.state.num_input_tokens_seen, trainer._buffered_inputs = self.tokens_seen, self.buffered
        python, numpy, cpu, cuda = self.rng
        random.setstate(python)
        np.random.set_state(numpy)
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def reset_peak() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def read_peak(asleep_now: int = 0, slept_through: bool = False) -> float:
    """GiB on the device at the peak since reset_peak(): torch's reserved peak plus what it does not manage (the
    CUDA context, NCCL); or on a CPU the process's peak resident set so far.

    asleep_now: bytes torch counts as reserved that vLLM has released to the driver (vllm_asleep_bytes).
    slept_through: vLLM slept the whole phase, so its released bytes were in every reading of the peak too."""
    import torch

    if not torch.cuda.is_available():
        scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / GIB
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    held = torch.cuda.memory_reserved() - asleep_now  # what torch's segments hold on the device now
    outside = max(0, total - free - held)
    return (torch.cuda.max_memory_reserved() - (asleep_now if slept_through else 0) + outside) / GIB


def vllm_asleep_bytes(trainer) -> int:
    """What vLLM released while asleep in standby: unsloth_zoo's sleep unmaps every allocation of vLLM's sleep
    allocator but the weights it shares with training. 0 when vLLM is awake, has no sleep mode, or is not here."""
    llm = getattr(trainer, "llm", None) or getattr(trainer.model, "vllm_engine", None)
    engine = getattr(llm, "llm_engine", None)
    if engine is None or not hasattr(engine, "is_sleeping") or not engine.is_sleeping():
        return 0
    from vllm.device_allocator.cumem import CuMemAllocator

    allocations = CuMemAllocator.get_instance().pointer_to_data.values()
    return sum(data.handle[1] for data in allocations if data.tag != "weights")


def optimizer_gib(model, optim: str) -> float:
    from kit.plan.memory import optimizer_bytes

    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable * optimizer_bytes(optim) / GIB


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
    from kit.plan.vllm_share import STANDBY_COUNTING, standby_applies

    if plan is None or not plan.cfg.model.fast_inference:
        return None
    return STANDBY_COUNTING if standby_applies(plan.cfg, plan.shape.vision is not None) else None


def other_gpu_line(result: ProbeResult, plan) -> str:
    """What a step measured on this GPU says about the one --gpu named: all of it without vLLM (no term depends on
    the GPU's size); with vLLM only the part beside vLLM's share, as that share is a fraction of each GPU."""
    from kit.plan.vllm_share import vllm_utilization

    named = f"--gpu {plan.gpu} ({plan.gpu_gib:.1f} GiB) is not the GPU here ({result.device}, {result.gpu_gib:.1f})"
    if not plan.cfg.model.fast_inference:
        verdict = "would fit" if result.total_gib <= FITS_UNDER * plan.gpu_gib else "would not fit"
        return (f"{named}: this step's {result.total_gib:.1f} GiB {verdict} it (no vLLM: nothing in the step "
                "depends on the GPU's size)")
    vision = plan.shape.vision is not None
    beside = result.total_gib - vllm_utilization(plan.cfg, result.gpu_gib, vision) * result.gpu_gib
    there = vllm_utilization(plan.cfg, plan.gpu_gib, vision) * plan.gpu_gib
    verdict = "would fit" if max(0.0, beside) + there <= FITS_UNDER * plan.gpu_gib else "would not fit"
    return (f"{named}: the probe measured {max(0.0, beside):.1f} GiB beside vLLM's share here; beside the "
            f"{plan.gpu}'s share ({there:.1f} GiB) that {verdict} it. vLLM's own part there (its weights and KV "
            f"cache) is the plan's estimate ({plan.peak_gib:.1f} GiB in all), not measured")


def advice(plan) -> str:  # the plan's proposals (each a setting that fits on its own), else what sizes the step
    if plan is not None and plan.proposals:
        return "; ".join(plan.proposals)
    return "Lower grpo.max_completion_length, grpo.num_generations or data.max_prompt_length"


def gpu_total_gib() -> float | None:
    import torch

    return torch.cuda.mem_get_info()[1] / GIB if torch.cuda.is_available() else None
