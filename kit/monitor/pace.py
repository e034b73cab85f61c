"""Each training step's wall time, handed to kit.cpu_threads, which re-counts the free cores when one is slow."""

from __future__ import annotations

import time

from transformers import TrainerCallback

from kit import cpu_threads


class StepPace(TrainerCallback):
    def __init__(self):
        self.started: float | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        cpu_threads.new_stage()

    def on_step_begin(self, args, state, control, **kwargs):
        self.started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self.started is not None:
            cpu_threads.step_finished(time.perf_counter() - self.started)
            self.started = None
