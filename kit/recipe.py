"""The recipe contract: what a task module gives the kit, and how the kit finds it.

A recipe is a plain module (`recipes/<name>.py`, any importable `pkg.module`, or a `.py` file) with:

    prepare(split: str, source: str | None) -> datasets.Dataset
        rows with a chat-format `prompt` column (a list of {"role", "content"} messages) and the
        columns its rewards read (e.g. `answer`); `source` is None for the recipe's hub dataset,
        or a local file path.
    REWARDS: RewardBundle
        reward functions with TRL's signature, each with its weight.
    DEFAULTS: dict            (optional) settings that differ from the kit's, same shape as the YAML.
    write_sample(path, split) (optional) writes a small data file in the format `prepare` reads, so
                              the smoke profile and the tests run offline.
    SAMPLE_COMPLETIONS        (optional) a few good and bad completions with their dataset columns,
                              [{"label": ..., "completion": ..., "answer": ...}], for `kit rewards check`.
    sft_target(row) -> str    (optional) the worked answer for a row, for the SFT warm start (stages: [sft, grpo])
    EVAL                      (optional) kit.eval.evaluate.Scoring(strict=..., lenient=..., formatted=...):
                              what counts as right for `kit eval`; default: the top-weighted reward.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kit.errors import KitError

RewardFn = Callable[..., list[float | None]]


@dataclass(frozen=True)
class Reward:
    fn: RewardFn
    weight: float

    @property
    def name(self) -> str:
        return self.fn.__name__  # TRL logs each reward as rewards/<name>/mean


class RewardBundle:
    """Reward functions with their weights, in the form TRL's GRPOTrainer takes them."""

    def __init__(self, *rewards: tuple[RewardFn, float] | Reward):
        self.rewards = [r if isinstance(r, Reward) else Reward(*r) for r in rewards]
        names = [r.name for r in self.rewards]
        duplicated = {n for n in names if names.count(n) > 1}
        if duplicated:
            raise KitError(f"reward names must be unique; repeated: {', '.join(sorted(duplicated))}")

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.rewards]

    @property
    def funcs(self) -> list[RewardFn]:
        return [r.fn for r in self.rewards]

    @property
    def weights(self) -> list[float]:
        return [r.weight for r in self.rewards]

    def reweighted(self, overrides: dict[str, float]) -> RewardBundle:
        """A copy with some weights changed by name; weight 0 drops the reward."""
        unknown = [name for name in overrides if name not in self.names]
        if unknown:
            raise KitError(f"unknown reward '{unknown[0]}'; choose from: {', '.join(self.names)}")
        kept = [Reward(r.fn, overrides.get(r.name, r.weight)) for r in self.rewards]
        kept = [r for r in kept if r.weight != 0]
        if not kept:
            raise KitError("every reward has weight 0; keep at least one")
        return RewardBundle(*kept)

    def with_adaptive(self, names: list[str]) -> RewardBundle:
        """A copy in which the named rewards scale with the running success rate (kit.rewards.adaptive)."""
        from kit.rewards.adaptive import AdaptiveWeight

        unknown = [name for name in names if name not in self.names]
        if unknown:
            raise KitError(f"adaptive_rewards: unknown reward '{unknown[0]}'; choose from: {', '.join(self.names)}")
        return RewardBundle(*(Reward(AdaptiveWeight(r.fn), r.weight) if r.name in names else r for r in self.rewards))

    def columns_needed(self) -> dict[str, list[str]]:
        """Dataset columns each reward takes by name (its parameters without defaults)."""
        ignored = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric"}
        needed = {}
        for r in self.rewards:
            params = inspect.signature(r.fn).parameters.values()
            needed[r.name] = [
                p.name for p in params
                if p.name not in ignored and p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            ]
        return needed


@dataclass
class Recipe:
    name: str
    prepare: Callable[[str, str | None], Any]
    rewards: RewardBundle
    defaults: dict = field(default_factory=dict)
    write_sample: Callable[[Path, str], None] | None = None
    sample_completions: list[dict] = field(default_factory=list)
    scoring: Any = None  # kit.eval.evaluate.Scoring
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
        raise KitError(f"recipe '{spec}': REWARDS must be a kit.recipe.RewardBundle, not {type(module.REWARDS).__name__}")
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
