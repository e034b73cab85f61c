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

from kit import env, ranks
from kit.checks.empty_completions import try_on_empty_completions
from kit.checks.gold_answers import check_gold_answers
from kit.checks.model_rewards import prepare_model_rewards
from kit.config import RunConfig
from kit.config.stages import StagePlan, stage_plans
from kit.data import holds_out_of_training, load_eval_rows, load_rows, split_off_held_out
from kit.data.held_out import HeldOutRecord, count_trained, trained_prompts
from kit.errors import KitError
from kit.models.names import resolve_model_name
from kit.outputs import RunDir
from kit.recipe import Recipe
from kit.rewards.bundle import RewardBundle
from kit.rewards.code import prepare_code_rewards
from kit.train.output_folder import claim_output, require_writable_folder
from kit.train.run_lock import hold_run_lock
from kit.train.stages import STAGES, StageInputs


@dataclass
class PreparedRun:
    rewards: RewardBundle  # every reward some stage trains with (the columns they read are checked)
    rows: object
    held_out: object
    out: RunDir
    stages: list[StagePlan]
    stage_rewards: dict[str, RewardBundle]  # each GRPO stage's, by its name
    stage_args: dict  # each stage's trainer arguments, by its name
    sandbox: str | None = None  # the code sandbox's isolation, when rewards run model code
    held_out_record: HeldOutRecord | None = None  # the rows held out of a local training file (OUT/held_out.json)
    trained_on: int = 0  # held-out prompts that are training prompts too (eval.path naming the training file)


def prepare_run(cfg: RunConfig, recipe: Recipe) -> PreparedRun:
    """Check everything that needs no model. The kit's tiny model, if used, is built here once."""
    stages = stage_plans(cfg)
    rewards, stage_rewards = reward_bundles(cfg, recipe, stages)
    # every reward of the recipe, a weight-0 one too (the held-out scoring reads it): a dead judge is one line
    prepare_model_rewards(recipe.rewards.funcs, cfg.judge, cfg.reward_models, recipe.judge_calibration)
    rows = load_rows(recipe, cfg.data, rewards)
    # a Python tool runs model code too: the same sandbox check
    sandbox = prepare_code_rewards(cfg.code_isolation, [*rewards.funcs, *recipe.toolbox.functions()], rows)
    try_on_empty_completions(rewards.funcs, rows, recipe.toolbox)
    check_gold_answers_before_training(recipe, rows, rewards)
    rows, held_out, record, trained_on = held_out_rows(cfg, recipe, rows, rewards)
    out = RunDir(output_path(cfg, recipe))
    stage_args = {plan.name: STAGES[plan.kind].arguments(StageInputs(plan.cfg, recipe, stage_rewards.get(
        plan.name, rewards), out, rows, stage=plan)) for plan in stages}  # built, and so checked, before loading
    resolve_model_name(cfg.model.name)
    check_pictures(cfg, recipe, rows)
    return PreparedRun(rewards, rows, held_out, out, stages, stage_rewards, stage_args, sandbox, record, trained_on)


def reward_bundles(cfg: RunConfig, recipe: Recipe, stages: list[StagePlan]):
    """(every reward some stage trains with, each GRPO stage's bundle). A stage's weights go over the run's; an
    adaptive reward is wrapped once, so its weight carries from one stage to the next."""
    every = recipe.rewards.with_adaptive(cfg.adaptive_rewards)
    by_stage = {}
    for plan in stages:
        if plan.kind == "grpo":
            try:
                by_stage[plan.name] = every.reweighted({**cfg.rewards, **plan.rewards})
            except KitError as err:
                raise KitError(f"stage {plan.name}: {err}" if plan.rewards else str(err)) from None
    bundles = list(by_stage.values()) or [every.reweighted(cfg.rewards)]
    used = {r.name: r for bundle in bundles for r in bundle.rewards}
    return RewardBundle(*used.values()), by_stage


def check_gold_answers_before_training(recipe: Recipe, rows, rewards: RewardBundle) -> None:
    """The correctness reward must pay the recipe's own worked answers: refused in one line if it cannot."""
    gold = check_gold_answers(recipe, rows, rewards)
    if ranks.is_main():
        print(gold.summary)
        for warning in gold.warnings:
            print(f"warning: {warning}")
    gold.raise_problem()


def check_pictures(cfg: RunConfig, recipe: Recipe, rows) -> None:
    """Pictures need a model that sees them, and an export that keeps its vision tower."""
    from kit.data.row_pictures import image_column
    from kit.models.vision_models import is_vision_model

    vision = is_vision_model(cfg.model.name)
    if image_column(rows) and not vision:
        raise KitError(f"recipe '{recipe.name}' shows the model pictures (column '{image_column(rows)}'), but "
                       f"{cfg.model.name} is a text model; choose a vision-language model (kit:tiny-vision on a "
                       "CPU, e.g. unsloth/Qwen2.5-VL-3B-Instruct on a GPU)")
    if vision and cfg.model.fast_inference and env.vllm_usable() and (most := most_pictures(rows)) > 1:
        raise KitError(f"recipe '{recipe.name}' shows up to {most} pictures a prompt, but Unsloth's vLLM engine takes "
                       "one a prompt (its limit_mm_per_prompt); give each row one picture, or generate with "
                       "transformers: model.fast_inference=false")
    if vision and "gguf" in cfg.save.formats:
        raise KitError(f"save.formats has gguf, but {cfg.model.name} is a vision-language model, and the kit's GGUF "
                       "export writes the language model alone (its vision projector, mmproj, is not exported yet): "
                       "the file would answer without seeing the picture. Save merged_16bit (transformers, vLLM) "
                       "instead: save.formats=[merged_16bit]")


def most_pictures(rows) -> int:
    """The most pictures any row shows, read from the Arrow column's list lengths (no picture decoded)."""
    import pyarrow.compute as pc

    from kit.data.row_pictures import image_column

    column = image_column(rows)
    if column != "images":
        return 1 if column else 0
    lengths = pc.list_value_length(rows.with_format("arrow")[column])
    return int(pc.max(lengths).as_py() or 0)


def held_out_rows(cfg: RunConfig, recipe: Recipe, rows, rewards: RewardBundle):
    """(training rows, held-out rows or None, the record of rows held out of the training file, how many held-out
    prompts are training prompts too). Training on held-out prompts is said before anything loads."""
    held_out, record = load_eval_rows(recipe, cfg.data, cfg.eval, rewards), None
    everything = rows
    if cfg.eval.n and cfg.eval.holdout and holds_out_of_training(cfg.data.path, cfg.eval.path):
        rows, held_out, indices = split_off_held_out(rows, cfg.eval.holdout, cfg.eval.n, cfg.seed, cfg.data.path)
        record = HeldOutRecord.of(cfg.data, held_out, indices) if held_out is not None else None
    trained_on = count_trained(held_out, trained_prompts(everything, record)) if held_out is not None else 0
    if trained_on:
        print(f"eval: WARNING: {trained_on} of the {len(held_out)} held-out prompts are also training prompts: "
              "the before/after scores will not be held-out scores; set eval.path to a file of other prompts")
    return rows, held_out, record, trained_on


@contextmanager
def claimed_run(cfg: RunConfig, recipe: Recipe, resume: bool) -> Iterator[tuple[PreparedRun, Path | None]]:
    """Check the run, then hold OUT's lock while it runs (no second run can write there meanwhile) and claim OUT:
    a used, locked or finished one is refused. Yields the prepared run and the checkpoint to resume from.

    One process runs its training inside this; a multi-process launch starts its ranks inside it."""
    run = prepare_run(cfg, recipe)
    with hold_run_lock(run.out.root):
        yield run, claim_output(cfg, run.out.root, resume)


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
