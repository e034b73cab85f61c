"""What a run checks before a model is loaded: rewards, data, trainer arguments, the output folder's path.

Config and data errors surface here, before anything is written, and for several processes before any
of them starts: kit.train.launch.launcher starts its ranks inside `claimed_run` too. The folder's contents
are checked after this, under its lock (kit.train.output_folder).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from kit import ranks
from kit.config import RunConfig
from kit.data import holds_out_of_training, load_eval_rows, load_rows, split_off_held_out
from kit.env import package_versions
from kit.errors import KitError
from kit.models.names import resolve_model_name
from kit.outputs import RunDir
from kit.recipe import Recipe
from kit.rewards.bundle import RewardBundle
from kit.rewards.code import prepare_code_rewards
from kit.rewards.guard import try_on_empty_completions
from kit.train.output_folder import claim_output, require_writable_folder
from kit.train.run_lock import hold_run_lock
from kit.train.stages import STAGES, StageInputs


@dataclass
class PreparedRun:
    rewards: RewardBundle
    rows: object
    held_out: object
    out: RunDir
    stage_args: dict
    sandbox: str | None = None  # the code sandbox's isolation, when rewards run model code


def prepare_run(cfg: RunConfig, recipe: Recipe) -> PreparedRun:
    """Check everything that needs no model. The kit's tiny model, if used, is built here once."""
    rewards = recipe.rewards.reweighted(cfg.rewards).with_adaptive(cfg.adaptive_rewards)
    rows = load_rows(recipe, cfg.data, rewards)
    # a Python tool runs model code too: the same sandbox check
    sandbox = prepare_code_rewards(cfg.code_isolation, [*rewards.funcs, *recipe.toolbox.functions()], rows)
    try_on_empty_completions(rewards.funcs, rows, recipe.toolbox)
    held_out = load_eval_rows(recipe, cfg.data, cfg.eval, rewards)
    if cfg.eval.n and cfg.eval.holdout and holds_out_of_training(cfg.data.path, cfg.eval.path):
        rows, held_out = split_off_held_out(rows, cfg.eval.holdout, cfg.eval.n, cfg.seed, cfg.data.path)
    out = RunDir(output_path(cfg, recipe))
    stage_args = build_stage_args(cfg, recipe, rows, rewards, out)
    resolve_model_name(cfg.model.name)
    return PreparedRun(rewards, rows, held_out, out, stage_args, sandbox)


@contextmanager
def claimed_run(cfg: RunConfig, recipe: Recipe, resume: bool) -> Iterator[tuple[PreparedRun, Path | None]]:
    """Check the run, then hold OUT's lock while it runs (no second run can write there meanwhile) and claim OUT:
    a used, locked or finished one is refused. Yields the prepared run and the checkpoint to resume from.

    One process runs its training inside this; a multi-process launch starts its ranks inside it."""
    run = prepare_run(cfg, recipe)
    with hold_run_lock(run.out.root):
        yield run, claim_output(cfg, run.out.root, resume)


def build_stage_args(cfg: RunConfig, recipe: Recipe, rows, rewards: RewardBundle, out: RunDir) -> dict:
    """Each stage's trainer arguments, built (and so checked) before anything is loaded."""
    inputs = StageInputs(cfg, recipe, rewards, out, rows)
    return {stage: STAGES[stage].arguments(inputs) for stage in cfg.stages}


def default_output_dir(recipe_name: str) -> Path:
    return Path("outputs") / f"{recipe_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def output_path(cfg: RunConfig, recipe: Recipe) -> Path:
    """Where this run writes; what it may find there is checked once it holds the folder."""
    if ranks.in_worker() and not cfg.output_dir:  # each rank would pick its own timestamped default
        raise KitError("a multi-process run needs --out: start it with kit train --num-processes N, "
                       "or pass --out to every process")
    out = Path(cfg.output_dir) if cfg.output_dir else default_output_dir(recipe.name)
    if ranks.is_main():  # a file in OUT's place or a folder it cannot write to: refused before loading
        require_writable_folder(out)
    return out


def write_run_file(out: RunDir, cfg: RunConfig) -> None:
    """The resolved config (loadable with --config) and, under `versions`, what it ran with."""
    record = cfg.model_dump(mode="json")
    record["output_dir"] = str(out)
    text = yaml.safe_dump(record, sort_keys=False)
    text += "# what this run used; ignored when the file is read back as a config\n"
    text += yaml.safe_dump({"versions": package_versions()}, sort_keys=False)
    out.run_file.write_text(text)
