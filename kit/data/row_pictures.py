"""A row's pictures, wherever the kit meets them (preparing, training, scoring, watching a run): the column that
holds them, the row's pictures as a list, the key that finds a row again by what the model was shown, and the
name a sample gives its picture.

    column = image_column(rows)                       # "image", "images" or None
    key = row_key(row["prompt"], row[column])         # the prompt's text and its pictures' pixels
"""

from __future__ import annotations

from kit.digest import picture_digest

IMAGE_COLUMNS = ("image", "images")


def image_column(rows) -> str | None:
    """The column of a dataset (or a row's keys) that holds pictures, or None."""
    names = getattr(rows, "column_names", rows)
    return next((c for c in IMAGE_COLUMNS if c in names), None)


def row_images(value) -> list:
    """A row's pictures as a list: `image` holds one, `images` a list (None: none)."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def row_key(prompt: list[dict], images=None) -> str:
    """A row found again by what the model was shown: its prompt's text and its pictures' pixels. Many rows of a
    vision task share one question ("How many circles are there?"), so the text alone would mix them up.
    Pictures come from `images`, or from the image parts of a prompt TRL has filled in."""
    import json

    shown = [*row_images(images)]
    messages = []
    for message in prompt:
        content = message.get("content")
        if isinstance(content, list):
            shown += [part["image"] for part in content if part.get("type") == "image" and part.get("image")]
            content = "".join(part.get("text") or "" for part in content if part.get("type") == "text")
        messages.append({"role": message.get("role"), "content": content})
    return json.dumps({"prompt": messages, "pictures": [picture_digest(p) for p in shown]}, sort_keys=True)


def picture_name(picture, row: int) -> str:
    """What a sample calls its picture: the file it was read from, else its row in the training data."""
    filename = getattr(picture, "filename", "")
    return filename or f"training row {row}"
