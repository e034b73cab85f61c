"""The kit's exception types: a mistake the user can fix, and a run stopped on request. The CLI prints
either message without a traceback."""

from __future__ import annotations

from pathlib import Path


def first_line(err: BaseException, limit: int = 300) -> str:
    """An exception's message in one line, as the kit quotes a library's error inside its own."""
    return (str(err).strip().splitlines() or [""])[0][:limit]


class KitError(Exception):
    """A problem with the user's input (config, data, recipe, model): the message says what to change."""


class Interrupted(KitError):
    """Training stopped on a signal after saving a checkpoint (kit.train.resume); the CLI exits with 130."""

    def __init__(self, out, checkpoint: Path | None, recipe_name: str, several_machines: bool = False):
        if checkpoint is None:  # stopped during the SFT warm start: GRPO has nothing to continue from
            super().__init__("interrupted before GRPO saved a checkpoint, so there is nothing to continue from; "
                             f"start it again with the same command (a new run clears {out} and reuses it)")
            return
        super().__init__(f"interrupted: checkpoint saved in {checkpoint}; continue with: python -m kit train "
                         f"{recipe_name} --out {out} --resume   (or: make train RECIPE={recipe_name} OUT={out} "
                         "RESUME=1)" + (", on every machine with its own NODE_RANK (launch.machine_rank), each "
                                        "seeing this OUT" if several_machines else ""))
