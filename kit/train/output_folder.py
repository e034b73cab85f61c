"""What a run may find in its OUT when it starts; decided while it holds OUT's lock (kit.train.run_lock).

- A new run needs an empty OUT, or one holding only a run that stopped before its first complete GRPO
  checkpoint (a crash, kill -9, out of memory, Ctrl-C during the warm start): nothing there can be
  continued, so that start is cleared and this one begins afresh. Refusing it was a dead end: RESUME
  had nothing to continue from and a plain retry was refused too.
- A resumed run continues from the newest complete checkpoint, skipping (and removing) newer ones cut
  short; it is refused, with where its outputs are, when the run has already finished.
- Either way, folders a killed process left half-written (`.merged.partial-*`, `.export.partial-*`) go.
- Before all that, `require_writable_folder` refuses a file in OUT's place or a folder this process
  cannot write to: otherwise that fails only when the run first writes, after the model has loaded.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from kit import ranks
from kit.atomic import PARTIAL, remove_partials
from kit.config import RunConfig
from kit.config.stages import stage_plans
from kit.diskspace import nearest_existing
from kit.errors import KitError
from kit.outputs import LOCK_NAME, RunDir
from kit.train.checkpoints import any_complete_checkpoint, latest_complete, planned_steps, trained_to_plan


def claim_output(cfg: RunConfig, out: Path, resume: bool) -> Path | None:
    """Check (and tidy) OUT for this run; the checkpoint to continue from when resuming, else None."""
    checkpoint = resume_checkpoint(cfg, out) if resume else None
    if ranks.is_main():  # rank 0 alone writes to OUT
        if not resume:
            start_fresh(out)
        sweep_partials(out)
    return checkpoint


def contents(out: Path) -> list[Path]:
    """What OUT holds, apart from the lock file and half-written temporary folders."""
    if not out.is_dir():
        return []
    return [p for p in out.iterdir() if p.name != LOCK_NAME and PARTIAL not in p.name]


def start_fresh(out: Path) -> None:
    entries = contents(out)
    if not entries:
        return
    if not stopped_before_first_checkpoint(out, entries):
        raise KitError(f"output folder {out} is not empty; choose another OUT, remove it, or resume it (RESUME=1)")
    print(f"run: {out} holds a run that stopped before its first checkpoint; clearing it and starting again")
    for path in entries:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def stopped_before_first_checkpoint(out: Path, entries: list[Path]) -> bool:
    """OUT holds the kit's early files only (so nothing of the user's) and no checkpoint to continue from."""
    run = RunDir(out)
    return (run.run_file.is_file() and all(p.name in run.early_entries() for p in entries)
            and not any_complete_checkpoint(run.checkpoints))


def sweep_partials(out: Path) -> None:
    for path in remove_partials(out) + remove_partials(RunDir(out).gguf):
        print(f"run: removed {path.name}, left half-written by a process that was stopped")


def resume_checkpoint(cfg: RunConfig, out: Path) -> Path:
    """The newest complete checkpoint of the run in OUT, of its latest GRPO stage that has one; refuses a finished
    run."""
    run = RunDir(out)
    if not run.run_file.is_file():
        raise KitError(f"cannot resume: {out} holds no run (no {run.run_file.name}); pass the OUT of the "
                       "interrupted run")
    grpo = [plan for plan in stage_plans(cfg) if plan.kind == "grpo"]
    for plan in reversed(grpo):
        checkpoint, skipped = latest_complete(run.stage_checkpoints(plan.checkpoint_folder))
        for path, why in skipped:
            print(f"resume: skipping {path}: incomplete, {why}")
            if ranks.is_main():  # the trainer would count it among its checkpoints and may save into it
                shutil.rmtree(path, ignore_errors=True)
        if checkpoint is not None:
            break
    if checkpoint is None:
        raise KitError(f"cannot resume: no complete GRPO checkpoint in {run.checkpoints}: the run stopped before "
                       "its first one; start it again with the same OUT and without --resume (make train, no RESUME)")
    if plan is grpo[-1] and trained_to_plan(plan.cfg.grpo.max_steps, checkpoint) and run.report.is_file():
        steps = planned_steps(plan.cfg.grpo.max_steps, checkpoint)
        raise KitError(f"{out} is finished: all {steps} planned GRPO steps are trained and its outputs are written "
                       f"({', '.join(map(str, run.finished_outputs()))}); to train further, resume with more steps "
                       f"(--steps N, N > {steps}), or start a new run with another OUT")
    return checkpoint


def inside_the_kit(out: Path) -> bool:
    """Whether `out` lies in the kit's package (its code, the shipped recipes among it)."""
    import kit

    root, target = Path(kit.__file__).resolve().parent, out.resolve()
    return target == root or root in target.parents


def require_writable_folder(out: Path) -> None:
    """OUT must be a folder (or not exist yet) in a place where this process can create files."""
    if out.exists() and not out.is_dir():
        raise KitError(f"output folder {out} is a file; choose another OUT (a folder path)")
    if inside_the_kit(out):  # kit/sandbox/ is bound into every code sandbox; the package is code, not a place for runs
        raise KitError(f"output folder {out} is inside the kit's own kit package; choose an OUT outside it "
                       "(e.g. outputs/<name>)")
    base = nearest_existing(out)
    if not base.is_dir():
        raise KitError(f"output folder {out} cannot be made: {base} is a file; choose another OUT")
    try:  # a real probe: permissions, read-only mounts and quotas all show here, as root too
        os.rmdir(tempfile.mkdtemp(prefix=".kit-probe-", dir=base))
    except OSError as err:
        raise KitError(f"output folder {out} cannot be written: creating a folder in {base} failed "
                       f"({err.strerror}); choose an OUT in a folder you can write to") from None
