"""The recipe contract: what a task module gives the kit, and how the kit finds it.

A recipe is a plain module (`recipes/<name>.py`, any importable `pkg.module`, or a `.py` file) with:

    prepare(split: str, source: str | None) -> datasets.Dataset
        rows with a chat-format `prompt` column (a list of {"role", "content"} messages) and the
        columns its rewards read (e.g. `answer`); `source` is None for the recipe's hub dataset,
        or a local file path.
    REWARDS: kit.rewards.RewardBundle
        reward functions with TRL's signature, each with its weight.
    DEFAULTS: dict            (optional) settings that differ from the kit's, same shape as the YAML.
    write_sample(path, split) (optional) writes a small data file in the format `prepare` reads, so
                              the smoke profile and the tests run offline.
    SAMPLE_COMPLETIONS        (optional) a few good and bad completions with their dataset columns,
                              [{"label": ..., "completion": ..., "answer": ...}], for `kit rewards check`.
    sft_target(row) -> str    (optional) the worked answer for a row, for the SFT warm start (stages: [sft, grpo])
    EVAL                      (optional) kit.recipe.Scoring(strict=..., lenient=..., formatted=...):
                              what counts as right for `kit eval`; default: the top-weighted reward.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kit.errors import KitError
from kit.rewards.bundle import RewardBundle
from kit.rewards.guard import CheckedReward

Judge = Callable[[str, dict], bool]  # (completion text, dataset row) -> yes / no


@dataclass
class Scoring:
    """What counts as right in evaluation: a recipe's EVAL."""

    strict: Judge  # the right answer in the required format
    lenient: Judge  # the right answer stated anywhere
    formatted: Judge | None = None  # the required format, right or wrong; None: not reported


def default_scoring(rewards: RewardBundle) -> Scoring:
    """Without an EVAL: a completion is right when the top-weighted reward gives it 0.5 or more."""
    main = max(rewards.rewards, key=lambda r: r.weight)

    def right(text: str, row: dict) -> bool:
        completion = [{"role": "assistant", "content": text}]  # the form TRL hands rewards in training
        columns = {k: [v] for k, v in row.items() if k != "prompt"}
        value = CheckedReward(main.fn).call([completion], columns, where=" in evaluation")[0]
        return value is not None and value >= 0.5

    return Scoring(strict=right, lenient=right)


@dataclass
class Recipe:
    name: str
    prepare: Callable[[str, str | None], Any]
    rewards: RewardBundle
    defaults: dict = field(default_factory=dict)
    write_sample: Callable[[Path, str], None] | None = None
    sample_completions: list[dict] = field(default_factory=list)
    scoring: Scoring | None = None
    system_prompt: str | None = None
    sft_target: Callable[[dict], str] | None = None


def known_recipes() -> list[str]:
    import recipes

    return sorted(m.name for m in pkgutil.iter_modules(recipes.__path__) if not m.name.startswith("_"))


def load_recipe(spec: str) -> Recipe:
    """Find a recipe by name (`gsm8k`), dotted module path (`mypkg.task`) or file (`./task.py`)."""
    module = _import_recipe_module(spec)
    return recipe_from_module(module, spec)


def _import_recipe_module(spec: str) -> ModuleType:
    if spec.endswith(".py") or "/" in spec:
        path = Path(spec)
        if not path.is_file():
            raise KitError(f"recipe file {spec} does not exist")
        module_name = f"kit_user_recipe_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        with _syntax_errors_named(spec):
            loader_spec.loader.exec_module(module)
        return module
    if "." not in spec and spec in known_recipes():
        with _syntax_errors_named(spec):
            return importlib.import_module(f"recipes.{spec}")
    if "." in spec:
        try:
            with _syntax_errors_named(spec):
                return importlib.import_module(spec)
        except ModuleNotFoundError as err:
            if err.name and spec.startswith(err.name):
                raise KitError(f"cannot import recipe module '{spec}' ({err})") from None
            raise
    raise KitError(
        f"unknown recipe '{spec}'; choose from: {', '.join(known_recipes())} "
        "(or give a dotted module path, or a path to a .py file)"
    )


@contextmanager
def _syntax_errors_named(spec: str):
    """A recipe (or a module it imports) that does not parse: its file, line and Python's complaint."""
    try:
        yield
    except SyntaxError as err:
        raise KitError(f"recipe '{spec}': syntax error in {err.filename}, line {err.lineno}: {err.msg}; "
                       "fix that line (python -m py_compile FILE shows the same)") from None


def recipe_from_module(module: ModuleType, spec: str) -> Recipe:
    missing = [attr for attr in ("prepare", "REWARDS") if not hasattr(module, attr)]
    if missing:
        raise KitError(
            f"recipe '{spec}' lacks {' and '.join(missing)}: a recipe module defines "
            "prepare(split, source) and REWARDS = RewardBundle(...) (see recipes/gsm8k.py)"
        )
    if not isinstance(module.REWARDS, RewardBundle):
        raise KitError(f"recipe '{spec}': REWARDS must be a kit.rewards.RewardBundle, not {type(module.REWARDS).__name__}")
    name = getattr(module, "NAME", module.__name__.rsplit(".", 1)[-1].removeprefix("kit_user_recipe_"))
    return Recipe(
        name=name,
        prepare=module.prepare,
        rewards=module.REWARDS,
        defaults=getattr(module, "DEFAULTS", {}),
        write_sample=getattr(module, "write_sample", None),
        sample_completions=getattr(module, "SAMPLE_COMPLETIONS", []),
        scoring=getattr(module, "EVAL", None),
        system_prompt=getattr(module, "SYSTEM_PROMPT", None),
        sft_target=getattr(module, "sft_target", None),
    )
