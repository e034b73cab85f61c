"""Stopping cleanly and carrying on: Ctrl-C or SIGTERM saves a checkpoint; `--resume` continues from it.

The first signal asks the trainer to finish the current step, save a checkpoint and stop; a second one
interrupts at once. `latest_checkpoint` finds where to continue; the trainer then restores weights,
optimizer, scheduler, RNG state and its place in the data, so the run ends at the same step count.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from pathlib import Path

from transformers import TrainerCallback

from kit.launch import ranks


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
    checkpoints = [p for p in Path(folder).glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return max(checkpoints, key=lambda p: int(p.name.split("-")[-1]), default=None)
