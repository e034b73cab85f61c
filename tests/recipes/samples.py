"""A recipe's own sample data, written and prepared the way a smoke run reads it."""

from pathlib import Path


def prepared_samples(recipe_module, folder: Path) -> dict:
    """{split: prepared rows} for train and test, from the recipe's write_sample + prepare."""
    prepared = {}
    for split in ("train", "test"):
        path = folder / f"{split}.jsonl"
        recipe_module.write_sample(path, split)
        prepared[split] = recipe_module.prepare(split, str(path))
    return prepared
