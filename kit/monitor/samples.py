"""The samples a run keeps: a few of the latest completions with each reward, every N steps, in OUT/samples.jsonl
and on the console, and the pictures a vision run's samples saw, beside them so report.md can show them by the
answers.

    logger = SampleLogger(OUT/"samples.jsonl", every=10, count=3, dataset=dataset, columns=["answer"])
    pictures = SamplePictures(OUT/"samples", dataset)
    pictures.save(459)  ->  "samples/row-459.png" (relative to OUT), or None

Each picture is kept once, however often it is sampled, as a PNG no larger than THUMBNAIL pixels a side: a run
that samples 300 completions of large screenshots keeps a few megabytes, not the screenshots. Keeping one is never
worth stopping training for, so a picture that cannot be written is left out of its sample.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from transformers import TrainerCallback

from kit.atomic import partial_prefix
from kit.data.row_pictures import image_column, picture_name, row_images, row_key
from kit.monitor.health import say
from kit.outputs import RunDir
from kit.rewards.text import completion_text
from kit.tools.stats import transcript_text

THUMBNAIL = 256


class SampleLogger(TrainerCallback):
    """Every `every` steps: a few of the latest completions with each reward, to samples.jsonl and the console.

    A line keeps the completion as the rewards got it (a chat recipe's: its messages, a tool-using one's whole
    transcript) and the dataset columns the rewards read (e.g. `answer`), so the file is a ready input for
    `python -m kit rewards check RECIPE --completions OUT/samples.jsonl`. The console shows its text.
    """

    def __init__(self, path: Path, every: int = 10, count: int = 3, seed: int = 0, dataset=None,
                 columns: list[str] = ()):
        self.path, self.every, self.count = Path(path), every, count
        self.rng = random.Random(seed)
        self.trainer = None  # set after the trainer is built: the samples live in its last generation batch
        # TRL's record of a batch keeps prompts, not rows: find each row again by its prompt
        column = None if dataset is None else image_column(dataset)
        self.rows_by_prompt = {} if dataset is None else {
            row_key(row["prompt"], row.get(column)): {**{c: row[c] for c in columns}, **named_picture(row, column, i),
                                                      **({"picture_row": i} if column else {})}
            for i, row in enumerate(dataset)}
        self.pictures = SamplePictures(RunDir(self.path.parent).sample_pictures, dataset) if column else None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.trainer is None or not state.is_world_process_zero or "reward" not in (logs or {}):
            return
        if state.global_step % self.every and state.global_step != 1:
            return
        recorded = self.trainer._logs  # TRL keeps the latest generation batch here for log_completions
        total = len(recorded["completion"])
        if not total:
            return
        picks = sorted(self.rng.sample(range(total), min(self.count, total)))
        with self.path.open("a") as f:
            for i in picks:
                completion = recorded["completion"][i]
                sample = {"step": state.global_step, "prompt": completion_text(recorded["prompt"][i]),
                          "completion": completion,
                          **self.rows_by_prompt.get(row_key(recorded["prompt"][i], recorded_images(recorded, i)), {}),
                          "rewards": {name: values[i] for name, values in recorded["rewards"].items()}}
                row = sample.pop("picture_row", None)
                if row is not None and (picture := self.pictures.save(row)):
                    sample["picture"] = picture  # a copy of what it saw, for report.md
                f.write(json.dumps(sample) + "\n")
                rewards = " ".join(f"{n}={v:.2g}" for n, v in sample["rewards"].items())
                shown = transcript_text(completion) if has_tool_turns(completion) else completion_text(completion)
                text = " ".join(shown.split())
                say(f"sample (step {state.global_step}): {text[:90]!r}  {rewards}")


def has_tool_turns(completion) -> bool:
    """A completion with tool calls or results in it (shown as its whole transcript, not its last reply)."""
    return isinstance(completion, list) and any(
        isinstance(m, dict) and (m.get("role") == "tool" or m.get("tool_calls")) for m in completion)


def recorded_images(recorded: dict, i: int):
    """The pictures of TRL's i-th logged completion, unless its prompt's image parts hold them already."""
    prompt_has_them = any(isinstance(m.get("content"), list) and any(p.get("image") for p in m["content"])
                          for m in recorded["prompt"][i])
    images = recorded.get("images") or []
    return None if prompt_has_them or i >= len(images) else images[i]


def named_picture(row: dict, column: str | None, index: int) -> dict:
    """A vision row's sample names its picture (the first, when it has several)."""
    pictures = row_images(row.get(column)) if column else []
    return {"image": picture_name(pictures[0], index)} if pictures else {}


class SamplePictures:
    def __init__(self, folder: Path, dataset):
        self.folder, self.dataset = Path(folder), dataset
        self.column = image_column(dataset)

    def save(self, row: int) -> str | None:
        """The row's first picture, written once; its path relative to the run's folder."""
        path = self.folder / f"row-{row}.png"
        if not path.is_file():
            pictures = row_images(self.dataset[row][self.column])
            if not pictures or not hasattr(pictures[0], "thumbnail"):
                return None
            try:
                write_thumbnail(pictures[0], path)
            except (OSError, ValueError):
                return None
        return f"{self.folder.name}/{path.name}"


def write_thumbnail(picture, path: Path) -> None:
    small = picture.convert("RGB")  # a copy in a mode PNG keeps (CMYK, I;16 and others are not)
    small.thumbnail((THUMBNAIL, THUMBNAIL))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(partial_prefix(path) + "png")
    small.save(partial, format="PNG")
    os.replace(partial, path)  # a run stopped mid-write leaves no broken picture behind a sample's name
