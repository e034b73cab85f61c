"""The pictures a vision run's samples saw, kept beside samples.jsonl so report.md can show them by the answers.

    pictures = SamplePictures(OUT/"samples", dataset)
    pictures.save(459)  ->  "samples/row-459.png" (relative to OUT), or None

Each picture is kept once, however often it is sampled, as a PNG no larger than THUMBNAIL pixels a side: a run
that samples 300 completions of large screenshots keeps a few megabytes, not the screenshots. Keeping one is never
worth stopping training for, so a picture that cannot be written is left out of its sample.
"""

from __future__ import annotations

import os
from pathlib import Path

from kit.atomic import partial_prefix
from kit.data.row_pictures import image_column, row_images

THUMBNAIL = 256


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
