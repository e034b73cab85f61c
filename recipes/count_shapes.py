"""Counting shapes in a picture ("How many triangles are there?"): the kit's vision task, with images it draws.

    make demo-vision           # a tiny vision-language model: SFT, then GRPO (configs/demo_vision.yaml)
    make train RECIPE=count_shapes MODEL=unsloth/Qwen2.5-VL-3B-Instruct   # on a GPU

Each 64x64 picture holds 1 to 6 shapes of one kind (circles, squares or triangles), of random size, colour and
place, none overlapping; the question names the kind, and the answer is the count in `<answer>N</answer>`. The
pictures are drawn with PIL from a seed, so every machine makes the same ones offline: 2,000 for training and a
held-out 200 drawn from another seed (no picture is in both: the test split's are checked against the training
split's by their pixels). Paid: the right count (answer_correct), the format, and half for a count one off.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from pathlib import Path

from datasets import Dataset

from kit.recipe import Scoring
from kit.rewards import RewardBundle, answer_correct, numeric_closeness, tag_format

SIZE = 64
KINDS = ("circle", "square", "triangle")
ROWS = {"train": 2000, "test": 200}
DATA = "generated: drawn pictures"
ANSWER_FORMAT = tag_format("answer", r"\d+")

PICTURES = True  # rows carry an `image`: the smoke profile trains kit:tiny-vision
PICTURE_SIZE = (SIZE, SIZE)  # for the memory plan's image tokens
SAMPLE_ROWS = 32

REWARDS = RewardBundle(
    (answer_correct, 1.0),  # the <answer> holds the right count
    (ANSWER_FORMAT, 0.2),  # the whole reply is one <answer>N</answer>
    (numeric_closeness(within=2), 0.3),  # half for a count one off: GRPO tells a near miss from a wild guess
)

DEFAULTS = {
    "data": {"max_prompt_length": 128},
    "grpo": {"max_completion_length": 12},
    "eval": {"max_new_tokens": 12},
}


def draw(rng: random.Random, kind: str, count: int):
    """A white picture with `count` shapes of `kind`, none touching another or the edge."""
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (SIZE, SIZE), "white")
    pen = ImageDraw.Draw(picture)
    for x, y, r in places(rng, count):
        colour = tuple(rng.randint(0, 200) for _ in range(3))  # never near the white ground
        if kind == "circle":
            pen.ellipse([x - r, y - r, x + r, y + r], fill=colour)
        elif kind == "square":
            pen.rectangle([x - r, y - r, x + r, y + r], fill=colour)
        else:
            pen.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=colour)
    return picture


def places(rng: random.Random, count: int) -> list[tuple[int, int, int]]:
    """Centres and half-widths of `count` shapes two pixels apart or more: a square's or triangle's corners lie
    within sqrt(2) half-widths of its centre. A layout that leaves no room is drawn again."""
    placed: list[tuple[int, int, int]] = []
    for _ in range(1000):
        if len(placed) == count:
            return placed
        r = rng.randint(SIZE // 16, SIZE // 9)
        x, y = rng.randint(r + 1, SIZE - r - 2), rng.randint(r + 1, SIZE - r - 2)
        if all(math.hypot(x - px, y - py) > (r + pr) * math.sqrt(2) + 2 for px, py, pr in placed):
            placed.append((x, y, r))
        elif len(placed) and rng.random() < 0.01:
            placed = []  # start the layout again
    raise RuntimeError(f"no room for {count} shapes in {SIZE}x{SIZE}")


def to_row(picture, kind: str, count: int) -> dict:
    return {
        "prompt": [{"role": "user", "content": f"How many {kind}s are there?"}],
        "image": picture,
        "answer": str(count),
    }


def pictures(split: str) -> list[dict]:
    """The split's rows, the same on every machine; a test picture never repeats a training one."""
    rng = random.Random(f"count-shapes-{split}")
    seen = {digest(row["image"]) for row in pictures("train")} if split == "test" else set()
    rows = []
    while len(rows) < ROWS.get(split, ROWS["test"]):
        kind, count = rng.choice(KINDS), rng.randint(1, 6)
        picture = draw(rng, kind, count)
        if digest(picture) not in seen:
            rows.append(to_row(picture, kind, count))
    return rows


def digest(picture) -> str:
    return hashlib.sha256(picture.tobytes()).hexdigest()


def prepare(split: str, source: str | None):
    """The drawn split (source None), or a local file of questions and answers beside their images."""
    if source is None:
        return Dataset.from_list(pictures(split))
    from kit.data.images import read_image_table

    return read_image_table(source, split, ["prompt", "image", "answer"])


def write_sample(path: Path, split: str) -> None:
    """A small file of the split's first rows, its pictures as PNG files in a folder beside it, named in the
    file relative to it: the layout `data.path` reads for a task of one's own."""
    path = Path(path)
    folder = path.parent / f"count_shapes-{split}-images"
    folder.mkdir(exist_ok=True)
    lines = []
    for i, row in enumerate(pictures(split)[:SAMPLE_ROWS]):
        # whole or not at all: the ranks of a multi-process run each write the sample, and read it as another writes
        partial = folder / f".{i}.png.{os.getpid()}"
        try:
            row["image"].save(partial, format="PNG")
            os.replace(partial, folder / f"{i}.png")
        finally:
            partial.unlink(missing_ok=True)
        lines.append(json.dumps({**row, "image": f"{folder.name}/{i}.png"}) + "\n")
    path.write_text("".join(lines))


def sft_target(row: dict) -> str:
    return f"<answer>{row['answer']}</answer>"


# strict: the right count in a reply that is one <answer>N</answer>; lenient: the right count, whatever else it says
EVAL = Scoring(strict=(answer_correct, ANSWER_FORMAT), lenient=answer_correct, formatted=ANSWER_FORMAT)

SAMPLE_COMPLETIONS = [
    {"label": "right", "completion": "<answer>3</answer>", "answer": "3"},
    {"label": "one off", "completion": "<answer>4</answer>", "answer": "3"},
    {"label": "far off", "completion": "<answer>6</answer>", "answer": "3"},
    {"label": "right, no tag", "completion": "3", "answer": "3"},
    {"label": "empty", "completion": "", "answer": "3"},
]
