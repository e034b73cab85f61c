"""Which rows a run held out of its training file (OUT/held_out.json), and which prompts it trained on.

A run on a local file without eval.path sets `eval.holdout` of its rows aside (kit.data.rows.split_off_held_out).
It records them by index in the recipe's prepared rows, with each prompt's key and the file's sha256, so that
`kit eval --model OUT/merged` scores exactly those rows and refuses to score others in their name when the file
or the recipe changed since. The record is small: two short strings a row, however long the prompts are.

    OUT/held_out.json  {"source": "/abs/data.jsonl", "sha256": "...", "split": "train", "limit": null,
                        "system_prompt": null, "rows": [3, 17, ...], "prompts": ["9f2c...", ...]}
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from kit.config import DataConfig
from kit.digest import file_sha256, shown_keys
from kit.errors import KitError


@dataclass(frozen=True)
class HeldOutRecord:
    source: str  # the training file, absolute
    sha256: str
    split: str
    limit: int | None  # data.limit and data.system_prompt: the rows are indexed as the run prepared them
    system_prompt: str | None
    rows: list[int]
    prompts: list[str]

    @classmethod
    def of(cls, data: DataConfig, held_out, indices: list[int]) -> HeldOutRecord:
        source = Path(data.path).resolve()
        return cls(str(source), file_sha256(source), data.split, data.limit, data.system_prompt, list(indices),
                   shown_keys(held_out))

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def read(cls, path: Path) -> HeldOutRecord | None:
        return cls(**json.loads(path.read_text())) if path.is_file() else None

    def data_config(self, max_prompt_length: int) -> DataConfig:
        return DataConfig(path=self.source, split=self.split, limit=self.limit, system_prompt=self.system_prompt,
                          max_prompt_length=max_prompt_length)

    def select(self, rows, where: Path):
        """The held-out rows out of the training file's rows, prepared again: refused if they are not the same."""
        if not Path(self.source).is_file():
            raise KitError(f"the run's training file {self.source} ({where} names its held-out rows) is gone; "
                           "pass held-out data with --data FILE")
        if file_sha256(self.source) != self.sha256:
            raise KitError(f"{self.source} changed since the run held rows of it out ({where}): its rows can no "
                           "longer be told apart; pass held-out data with --data FILE")
        if max(self.rows, default=-1) >= len(rows) or shown_keys(rows.select(self.rows)) != self.prompts:
            raise KitError(f"the recipe no longer prepares {self.source} as the run did: the prompts at the indices "
                           f"in {where} differ; evaluate with the recipe the run used, or pass --data FILE")
        return rows.select(self.rows)


def trained_prompts(rows, held_out: HeldOutRecord | None) -> set[str]:
    """The keys of the prompts a run trained on: its training file's rows, less the ones it held out."""
    held = set(held_out.rows) if held_out else set()
    return {key for i, key in enumerate(shown_keys(rows)) if i not in held}


def count_trained(rows, trained: set[str]) -> int:
    """How many of `rows` have a prompt the run trained on."""
    return sum(key in trained for key in shown_keys(rows))
