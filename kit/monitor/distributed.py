"""OUT/distributed.json: what each rank of a multi-process run did, measured in that rank.

    {"num_processes": 2, "launcher": "ddp", "backend": "gloo", "ranks": [
        {"rank": 0, "device": "cpu", "optimizer_steps": 2, "completions_per_step": [2, 2],
         "trainable_norm_start": 0.61, "trainable_norm_end": 0.63, "last_step": 2}, ...]}

Completions are counted where this rank scores them (its share of each step's batch); the norm of the
trainable weights shows that the rank trained (end differs from start) and, under DDP, that the ranks
stayed in step (the same end norm on every rank). ZeRO-3 and FSDP split each weight, so there the
norms are left out (null).
"""

from __future__ import annotations

import inspect
import json
import socket
from pathlib import Path

from transformers import TrainerCallback

from kit import ranks
from kit.config import SHARDED


class CountedReward:
    """A reward function that also counts the completions this rank scores with it."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__  # TRL names the metric after it
        self.__signature__ = inspect.signature(fn)
        self.scored = 0

    def __call__(self, completions, **kwargs):
        self.scored += len(completions)
        return self.fn(completions=completions, **kwargs)


class RankReport(TrainerCallback):
    """Counts steps and completions in every rank; rank 0 writes them all to `path` when training ends."""

    def __init__(self, path: Path, counter: CountedReward, launcher: str):
        self.path, self.counter, self.launcher = Path(path), counter, launcher
        self.record: dict = {"rank": ranks.rank(), "machine": ranks.machine_rank(), "host": socket.gethostname(),
                             "optimizer_steps": 0,
                             "completions_per_step": []}
        self.scored_before_step = 0

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.record["device"] = str(args.device)
        self.record["trainable_norm_start"] = self.norm(model)

    def on_step_end(self, args, state, control, **kwargs):
        self.record["optimizer_steps"] += 1
        self.record["completions_per_step"].append(self.counter.scored - self.scored_before_step)
        self.scored_before_step = self.counter.scored

    def on_train_end(self, args, state, control, model=None, **kwargs):
        self.record["trainable_norm_end"] = self.norm(model)
        self.record["last_step"] = state.global_step  # past optimizer_steps when the run was resumed
        everyone = ranks.gather_to_main(self.record)  # a collective: every rank gets here
        if everyone is None:
            return
        summary = {"num_processes": len(everyone), "launcher": self.launcher,
                   "backend": ranks.state().backend if ranks.in_worker() else None, "ranks": everyone}
        self.path.write_text(json.dumps(summary, indent=2) + "\n")

    def norm(self, model) -> float | None:
        """None with ZeRO-3 / FSDP: a rank holds a slice of each weight, whose norm would say nothing."""
        return None if self.launcher in SHARDED else trainable_norm(model)


def trainable_norm(model) -> float | None:
    import torch

    if model is None:
        return None
    trainable = [p.detach().float().flatten() for p in model.parameters() if p.requires_grad]
    return float(torch.linalg.vector_norm(torch.cat(trainable))) if trainable else None
