"""Each training step's wall time, handed to kit.cpu_threads, which re-counts the free cores when one is slow, and
to the run's clock (kit.monitor.finish_time), which says how long the run will take."""

from __future__ import annotations

import time

from transformers import TrainerCallback

from kit import cpu_threads
from kit.monitor import finish_time


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
        clock = finish_time.active()
        line = clock.step_ended(state.global_step, state.max_steps) if clock else None
        if line and state.is_world_process_zero:
            from tqdm.auto import tqdm

            tqdm.write(line)  # above the progress bar, as the step lines are
