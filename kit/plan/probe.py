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
still count it (its sleep allocator is a torch MemPool): the scoring and training phases leave it out. The readings
are kit/plan/device_memory.py's; what they say about the GPU, kit/plan/probe_verdict.py's.
"""

from __future__ import annotations

import copy
import random
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from transformers import TrainerCallback

from kit import env
from kit.errors import KitError
from kit.plan.device_memory import gpu_total_gib, read_peak, reset_peak, vllm_asleep_bytes
from kit.plan.gpus import GIB
from kit.plan.probe_verdict import ProbeResult, advice, report


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


def optimizer_gib(model, optim: str) -> float:
    from kit.plan.memory import optimizer_bytes

    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable * optimizer_bytes(optim) / GIB


