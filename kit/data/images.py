"""Rows that hold pictures: a JSONL/CSV/Parquet file of questions and answers beside a folder of images.

    rows = read_image_table("shapes/train.jsonl", "train", ["prompt", "image", "answer"])
    rows = read_image_table(None, "train", ["prompt", "image", "answer"], hub_id="org/dataset")   # from the hub

The `image` column holds each row's picture as a path, relative to the file's folder or absolute (`images`: a
list of them), or the pictures themselves: a Parquet file written by `datasets` (as hub datasets are stored)
keeps them inside, as an `Image` column. Every picture is opened before training: a missing file, one PIL cannot
read, or one larger than MAX_PIXELS stops the run with one error that names each bad row (the first five, and how
many in all), so nothing trains on a dataset with holes in it. The rows are returned with `datasets` images.
"""

from __future__ import annotations

from pathlib import Path

from kit.data.tables import load_table, require_columns
from kit.errors import KitError

MAX_PIXELS = 4096 * 4096  # far past what a processor keeps (Qwen2.5-VL's default max_pixels is 12.8M / 16)
SHOWN = 5


def read_image_table(source: str | None, split: str, columns: list[str], hub_id: str = "",
                     hub_config: str | None = None):
    """Rows with pictures from a local file, or (`source` None) from the hub dataset `hub_id`."""
    from datasets import Image, Sequence

    table = load_table(source, hub_id, split, hub_config)
    where = source or hub_id
    require_columns(table, columns, f"data {where}")
    column = "images" if "images" in table.column_names else "image"
    if holds_pictures(table.features.get(column)):
        return checked_embedded(table, column, where)
    if source is None:
        raise KitError(f"data {hub_id}: column '{column}' holds {table.features.get(column)}, not pictures; a hub "
                       "dataset's pictures must be an Image column")
    folder = Path(source).expanduser().resolve().parent
    resolved = [[str(resolve(p, folder)) for p in listed(value)] for value in table[column]]
    refuse_bad([f"row {i}: {problem}" for i, paths in enumerate(resolved) for path in paths
                if (problem := image_problem(Path(path)))], source, "paths are read relative to the file's folder")
    if column == "images":
        return table.remove_columns(column).add_column(column, resolved).cast_column(column, Sequence(Image()))
    return table.remove_columns(column).add_column(column, [p[0] for p in resolved]).cast_column(column, Image())


def holds_pictures(feature) -> bool:
    """An `Image` column, or a list of them: the pictures are in the table, not named by path."""
    from datasets import Image, List, Sequence

    inner = feature.feature if isinstance(feature, List | Sequence) else feature
    return isinstance(inner, Image)


def checked_embedded(table, column: str, source: str):
    """A table that holds its pictures: each is opened from its bytes (or its path, where the table keeps one),
    read undecoded from the table's Arrow column so that a bad one is named, not raised mid-training."""
    import io

    problems = []
    for i, value in enumerate(table.with_format("arrow")[column].to_pylist()):
        for stored in listed(value):
            if not stored or not (stored.get("bytes") or stored.get("path")):
                problem = "no picture"
            elif stored.get("bytes"):
                problem = image_problem(io.BytesIO(stored["bytes"]), f"its picture ({len(stored['bytes'])} bytes)")
            else:
                problem = image_problem(Path(stored["path"]))
            if problem:
                problems.append(f"row {i}: {problem}")
    refuse_bad(problems, source, "the pictures are the ones the file holds")
    return table


def refuse_bad(problems: list[str], source: str, hint: str) -> None:
    if problems:
        more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        raise KitError(f"data {source}: {len(problems)} picture(s) cannot be used: {'; '.join(problems[:SHOWN])}"
                       f"{more}. Fix or remove those rows; {hint}")


def listed(value) -> list:
    if isinstance(value, list):
        return value
    if value is None or value == "":
        return [""]
    return [value]


def resolve(path, folder: Path) -> Path:
    path = Path(str(path)).expanduser()
    return path if path.is_absolute() else folder / path


def image_problem(picture, name: str | None = None) -> str | None:
    """Why a picture (a path, or an open file of its bytes) cannot be used, or None: read its header and then its
    pixels, as training will."""
    from PIL import Image, UnidentifiedImageError

    name = name or str(picture)
    if isinstance(picture, Path) and not picture.is_file():
        return f"no picture at {picture}"
    try:
        with Image.open(picture) as opened:
            width, height = opened.size
            if width * height > MAX_PIXELS:
                return f"{name} is {width}x{height}, over {MAX_PIXELS:,} pixels; shrink it"
            opened.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as err:
        return f"{name} is not a picture PIL can read ({type(err).__name__})"
    return None
