"""Stopping cleanly and carrying on: Ctrl-C or SIGTERM saves a checkpoint; `--resume` continues from it.

The first signal asks the trainer to finish the current step, save a checkpoint and stop; a second one
interrupts at once. kit.train.checkpoints finds where to continue; the trainer then restores weights,
optimizer, scheduler, RNG state and its place in the data, so the run ends at the same step count.

`SaveEveryMinutes` also saves on time, besides every grpo.save_steps: a step takes 0.1 s on a tiny model
and minutes on a large one, so no one step count bounds the work a crash (no signal, no save) loses.
"""

from __future__ import annotations

import json
import signal
import time
from contextlib import contextmanager
from pathlib import Path

from transformers import TrainerCallback

from kit import ranks
from kit.errors import Interrupted
from kit.outputs import RunDir
from kit.train.checkpoints import all_checkpoints, guard_checkpoints, step_of


class GracefulStop(TrainerCallback):
    def __init__(self):
        self.requested = False

    def on_step_end(self, args, state, control, **kwargs):
        # ranks see the signal at different moments; they agree, and all stop after the same step
        self.requested = ranks.any_rank(self.requested)
        if self.requested:
            control.should_save = True
            control.should_training_stop = True


@contextmanager
def stop_on_signals(stopper: GracefulStop):
    """While training: the first SIGINT / SIGTERM sets the stop flag; the second gets the old handler."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handle(signum, frame):
        if stopper.requested:
            signal.signal(signum, previous[signum])
            signal.raise_signal(signum)
            return
        stopper.requested = True
        print(f"\nstop: {signal.Signals(signum).name} received: saving a checkpoint after this step "
              "(send it again to stop at once)", flush=True)

    for sig in previous:
        signal.signal(sig, handle)
    try:
        yield stopper
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def latest_checkpoint(folder: Path) -> Path | None:
    """The checkpoint just saved (a resumed run checks that it is complete: kit.train.checkpoints)."""
    return next(iter(all_checkpoints(folder)), None)


class SaveEveryMinutes(TrainerCallback):
    """Ask for a checkpoint once `minutes` have passed since the last one (or since training began)."""

    def __init__(self, minutes: float, clock=time.monotonic):
        self.seconds = minutes * 60
        self.clock = clock  # injectable: tests move time by hand
        self.last = clock()

    def on_train_begin(self, args, state, control, **kwargs):
        self.last = self.clock()  # model loading and the first evaluation are not work a crash would lose

    def on_step_end(self, args, state, control, **kwargs):
        # every rank must agree to save (a collective on each step, as GracefulStop's)
        if ranks.any_rank(self.clock() - self.last >= self.seconds):
            control.should_save = True

    def on_save(self, args, state, control, **kwargs):
        self.last = self.clock()



class SaveAtEnd(TrainerCallback):
    """A GRPO stage that another follows saves its last step, so a run stopped later resumes after it."""

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= state.max_steps:
            control.should_save = True


@contextmanager
def stop_on_request(out: RunDir, model, recipe_name: str, checkpoints: Path | None = None):
    """Around one stage: Ctrl-C / SIGTERM saves a checkpoint (into `checkpoints`, the stage's folder) and raises
    Interrupted; a full disk while saving one ends in one line, without an incomplete checkpoint left for --resume
    to pick."""
    checkpoints = checkpoints or out.checkpoints
    with stop_on_signals(GracefulStop()) as stopper, guard_checkpoints(checkpoints, model):
        yield stopper
    if stopper.requested:
        raise Interrupted(out, latest_checkpoint(checkpoints), recipe_name, ranks.several_machines())


def continue_from(out: RunDir, checkpoint: Path, stage: str = "grpo", later: tuple[str, ...] = ()) -> None:
    """Say where GRPO continues; metrics logged after that checkpoint (and by the stages after it) will be logged
    again."""
    print(f"resume: continuing GRPO{'' if stage == 'grpo' else f' stage {stage}'} from {checkpoint}")
    if ranks.is_main():
        drop_metrics_after(out.metrics, step_of(checkpoint), stage, later)


def drop_metrics_after(path: Path, step: int, stage: str = "grpo", later: tuple[str, ...] = ()) -> None:
    """Steps logged after the checkpoint will be trained and logged again; keep one record per step."""
    if not path.exists():
        return

    def retrained(record: dict) -> bool:
        name = record.get("stage", "grpo")
        return (name == stage and record["step"] > step) or name in later

    kept = [line for line in path.read_text().splitlines() if line.strip() and not retrained(json.loads(line))]
    path.write_text("".join(line + "\n" for line in kept))
