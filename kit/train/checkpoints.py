"""GRPO checkpoints: which one a resumed run continues from (kit.train.resume decides when they are saved).

A checkpoint cut short (kill -9 or a full disk while saving) has a name like any other; resuming from it
crashes. The trainer writes trainer_state.json after the weights and the optimizer, so a checkpoint counts
as complete when that file parses and every weights file is whole; `latest_complete` skips the others.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kit.diskspace import disk_space, folder_bytes

STATE = "trainer_state.json"
_BIN_WEIGHTS = ("adapter_model.bin", "pytorch_model.bin")


def step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.split("-")[-1])


def all_checkpoints(folder: Path) -> list[Path]:
    """checkpoint-N folders, newest first."""
    found = [p for p in Path(folder).glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return sorted(found, key=step_of, reverse=True)


def problem(checkpoint: Path) -> str | None:
    """Why the trainer could not resume from `checkpoint`, or None when it is complete."""
    try:
        json.loads((checkpoint / STATE).read_text())
    except FileNotFoundError:
        return f"no {STATE} (saving it was cut short)"
    except ValueError:
        return f"{STATE} is cut short"
    weights = sorted(checkpoint.glob("*.safetensors"))
    if not weights and not any((checkpoint / name).is_file() for name in _BIN_WEIGHTS):
        return "no model weights"
    broken = [w.name for w in weights if not whole_safetensors(w)]
    return f"{broken[0]} is cut short" if broken else None


def whole_safetensors(path: Path) -> bool:
    """The header's tensors lie within the file (reads the header only, not the tensors)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            f.keys()
    except (SafetensorError, OSError):  # "incomplete metadata, file not fully covered", or unreadable
        return False
    return True


def latest_complete(folder: Path) -> tuple[Path | None, list[tuple[Path, str]]]:
    """The newest complete checkpoint, and the newer incomplete ones skipped on the way, with why."""
    skipped = []
    for checkpoint in all_checkpoints(folder):
        why = problem(checkpoint)
        if why is None:
            return checkpoint, skipped
        skipped.append((checkpoint, why))
    return None, skipped


def any_complete_checkpoint(folder: Path) -> bool:
    """A complete checkpoint in OUT/checkpoints, or in a stage's folder under it (several GRPO stages)."""
    folder = Path(folder)
    stages = [p for p in folder.iterdir() if p.is_dir() and p not in all_checkpoints(folder)] if folder.is_dir() else []
    return any(latest_complete(f)[0] is not None for f in [folder, *stages])


def planned_steps(max_steps: int, checkpoint: Path) -> int:
    """The run's planned step count: grpo.max_steps, or (for -1, epochs) what the trainer worked out."""
    if max_steps > 0:
        return max_steps
    return json.loads((checkpoint / STATE).read_text())["max_steps"]


def trained_to_plan(max_steps: int, checkpoint: Path) -> bool:
    """Every planned step is in `checkpoint`: resuming from it must not train (the trainer would add one)."""
    return step_of(checkpoint) >= planned_steps(max_steps, checkpoint)


# --- a full disk while saving: the trainer writes checkpoint-N in place, trainer_state.json last ---

def incomplete_checkpoints(folder: Path) -> list[Path]:
    return [p for p in all_checkpoints(folder) if p.is_dir() and not (p / STATE).exists()]


def remove_incomplete_checkpoints(folder: Path) -> None:
    """A checkpoint cut short by a full disk would be picked by --resume and fail to load: remove it."""
    for path in incomplete_checkpoints(folder):
        shutil.rmtree(path, ignore_errors=True)


def checkpoint_bytes(folder: Path, model) -> int:
    """The last complete checkpoint's size, else an estimate: trainable weights + Adam's two fp32 moments."""
    complete = [p for p in all_checkpoints(folder) if (p / STATE).exists()]
    if complete:
        return folder_bytes(max(complete, key=lambda p: p.stat().st_mtime))
    trainable = [p for p in model.parameters() if p.requires_grad]
    return sum(p.numel() * (p.element_size() + 8) for p in trainable)


def guard_checkpoints(folder: Path, model):
    """For the training loop: a full disk while saving a checkpoint ends in one line, without a broken one."""
    return disk_space("a checkpoint", folder, needed=lambda: checkpoint_bytes(folder, model),
                      clean_up=lambda: remove_incomplete_checkpoints(folder))
