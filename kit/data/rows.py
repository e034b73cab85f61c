"""The run's rows: the recipe's prepared rows (or its sample), checked, limited, held out, and without the
prompts that would not fit.

TRL's GRPOConfig no longer truncates prompts (`max_prompt_length` was removed in TRL 0.28), so the
kit drops over-long prompts here, before training, and says how many.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

from kit.cache import cache_dir
from kit.config import SAMPLE_DATA, DataConfig
from kit.data.tables import recipe_rows, require_columns
from kit.errors import KitError
from kit.recipe import Recipe
from kit.user_code import call_user

SAMPLE_SPLITS = ("train", "test")  # what a recipe's sample data (write_sample) is written for


def sample_path(recipe: Recipe, split: str) -> Path:
    """Write the recipe's sample data for `split` (atomically) and return its path."""
    if recipe.write_sample is None:
        raise KitError(f"recipe '{recipe.name}' ships no sample data; set data.path to a file (DATA=...)")
    if split not in SAMPLE_SPLITS:  # a recipe's writer makes rows for any name, which would score made-up rows
        raise KitError(f"the sample data has the splits {' and '.join(SAMPLE_SPLITS)}, not '{split}'")
    folder = cache_dir() / "samples"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{recipe.name}-{split}.jsonl"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    os.close(fd)
    try:
        call_user(recipe.write_sample, Path(tmp), split, label="write_sample()",
                  context=lambda: f" writing the sample data of split {split!r}")
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


def load_rows(recipe: Recipe, cfg: DataConfig, rewards=None):
    """The recipe's rows, checked and limited; needs no model, so it runs before loading one."""
    source = str(sample_path(recipe, cfg.split)) if cfg.path == SAMPLE_DATA else cfg.path
    dataset = recipe_rows(recipe.prepare, cfg.split, source)
    check_prompts(dataset, recipe.name)
    if cfg.limit is not None:
        dataset = dataset.select(range(min(cfg.limit, len(dataset))))
    if cfg.system_prompt is not None:
        dataset = with_system_prompt(dataset, cfg.system_prompt)
    bundle = rewards if rewards is not None else recipe.rewards
    for reward, columns in bundle.columns_needed().items():
        require_columns(dataset, columns, f"the dataset of recipe '{recipe.name}' (reward '{reward}' reads it)")
    return dataset


def load_eval_rows(recipe: Recipe, data: DataConfig, eval_cfg, rewards=None):
    """Held-out rows for evaluation, or None (with the reason printed) when there are none to use."""
    reason = eval_skip_reason(data.path, eval_cfg.n, eval_cfg.path, eval_cfg.holdout)
    if reason:
        if eval_cfg.n:  # eval.n = 0 was asked for: nothing to say
            print(f"eval: skipped: {reason}")
        return None
    if holds_out_of_training(data.path, eval_cfg.path):  # kit.train.prepare splits them off the training rows
        return None
    held_out = DataConfig(path=eval_cfg.path or data.path, split=eval_cfg.split, limit=eval_cfg.n,
                          max_prompt_length=data.max_prompt_length, system_prompt=data.system_prompt)
    return load_rows(recipe, held_out, rewards)


def eval_skip_reason(data_path: str | None, eval_n: int, eval_path: str | None, holdout: float = 0.0) -> str | None:
    """Why a run scores no held-out prompts, or None when it does; said at the start and in report.md."""
    if eval_n == 0:
        return "eval.n = 0"
    if holds_out_of_training(data_path, eval_path) and holdout == 0:
        return (f"training data is the local file {data_path}, eval.path is not set and eval.holdout is 0; set "
                "eval.path to a held-out file, or eval.holdout to a share of this one, to score before and after")
    return None


def holds_out_of_training(data_path: str | None, eval_path: str | None) -> bool:
    """A local training file with no held-out file beside it: evaluation takes its rows from the training file."""
    return eval_path is None and data_path not in (None, SAMPLE_DATA)


def split_off_held_out(rows, share: float, most: int, seed: int, source: str):
    """(training rows, held-out rows, their indices in `rows`): `share` of the rows (at most `most`), drawn with
    `seed`, never trained on. The indices go to OUT/held_out.json, so `kit eval` scores the same rows."""
    count = min(most, round(share * len(rows)))
    if count < 1 or count >= len(rows):
        print(f"eval: skipped: {len(rows)} rows in {source} are too few to hold out {share:.0%} of them")
        return rows, None, []
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    held, kept = sorted(order[:count]), sorted(order[count:])
    print(f"eval: no eval.path: {count} of the {len(rows)} rows of {source} (eval.holdout {share:g}, seed {seed}) are "
          f"held out for the before/after scores and not trained on; set eval.path to score another file")
    return rows.select(kept), rows.select(held), held


def prepare_dataset(recipe: Recipe, cfg: DataConfig, tokenizer, rewards=None):
    """The recipe's dataset for training: checked, limited, and with over-long prompts dropped."""
    return drop_long_prompts(load_rows(recipe, cfg, rewards), tokenizer, cfg.max_prompt_length)


def check_prompts(dataset, recipe_name: str) -> None:
    import datasets

    if not isinstance(dataset, datasets.Dataset):
        raise KitError(f"recipe '{recipe_name}': prepare() returned {type(dataset).__name__}, not a datasets.Dataset; "
                       "return Dataset.from_list(rows) (from datasets import Dataset)")
    if len(dataset) == 0:
        raise KitError(f"recipe '{recipe_name}' produced no rows; check data.path and data.split")
    require_columns(dataset, ["prompt"], f"the dataset of recipe '{recipe_name}'")
    for index, prompt in enumerate(dataset["prompt"]):
        ok = isinstance(prompt, list) and prompt and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in prompt
        )
        if not ok:
            raise KitError(
                f"row {index}: 'prompt' must be a list of chat messages like "
                f"[{{'role': 'user', 'content': '...'}}], got {prompt!r:.120}"
            )


def with_system_prompt(dataset, system_prompt: str):
    """Rows whose prompt has no system message get `system_prompt` as their first message.

    Instruct models read the format they must answer in from the system message; without one, a chat
    template may insert its own default (SmolLM2's names the assistant and nothing else).
    """
    def add(row):
        prompt = row["prompt"]
        if prompt[0]["role"] != "system":
            prompt = [{"role": "system", "content": system_prompt}, *prompt]
        return {"prompt": prompt}

    return dataset.map(add)


def prompt_lengths(dataset, tokenizer, tools=None) -> list[int]:
    """Token count of each prompt as the model will see it (chat template + generation prompt, the tools' schemas)."""
    from kit.models.vision_models import text_tokenizer

    # a vision model's processor: its text alone (the pictures' tokens are not counted)
    tokenizer = text_tokenizer(tokenizer)
    return [
        len(tokenizer.apply_chat_template(prompt, tokenize=True, add_generation_prompt=True, return_dict=False,
                                          tools=tools or None))
        for prompt in dataset["prompt"]
    ]


def drop_long_prompts(dataset, tokenizer, max_prompt_length: int, tools=None):
    lengths = prompt_lengths(dataset, tokenizer, tools)
    keep = [i for i, n in enumerate(lengths) if n <= max_prompt_length]
    dropped = len(dataset) - len(keep)
    if not keep:
        raise KitError(
            f"every prompt is longer than data.max_prompt_length={max_prompt_length} tokens "
            f"(shortest: {min(lengths)}); raise data.max_prompt_length"
        )
    if dropped:
        print(f"data: dropped {dropped} of {len(dataset)} prompts longer than {max_prompt_length} tokens "
              f"(data.max_prompt_length); {len(keep)} remain")
        dataset = dataset.select(keep)
    return dataset
