"""`kit train`, step by step, in the order the steps happen: everything that can be refused without a model
first (the GPU, the recipe, the settings, the files), then Unsloth's import, the memory plan, and the run in
this process (kit.train.run) or in N processes (kit.train.launch).

    returncode = start_training(TrainRequest("gsm8k", {"grpo": {"max_steps": 50}}, out="outputs/gsm8k"))
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from kit import ranks
from kit.config import RunConfig, read_yaml
from kit.data import check_local_files
from kit.env import driver_problem, has_gpu
from kit.errors import Interrupted, KitError
from kit.models import import_unsloth_first
from kit.outputs import RunDir
from kit.plan.gpus import live_gpu_problem
from kit.plan.preflight import plan_before_loading
from kit.recipe import Recipe
from kit.recipes import load_recipe
from kit.train.launch.failures import record_failure, record_interruption, watch_for_failures
from kit.train.launch.machines import slurm_settings
from kit.train.record import changed_inputs


@dataclass(frozen=True)
class TrainRequest:
    """What `kit train` was asked, as the CLI parsed it."""

    recipe: str | None  # a name, dotted module path or .py file (kit.recipes.load_recipe); None: the config's
    overrides: dict  # the flags and key=value settings, as a config layer (above the --config file)
    config_file: str | None = None
    out: str | None = None
    resume: bool = False
    plan_gpu: str | None = None  # --gpu: plan for this GPU instead of the one here
    skip_plan: bool = False
    argv: tuple[str, ...] = ()  # `kit train ...` as typed: a multi-process run starts its ranks with it


def start_training(request: TrainRequest) -> int:
    ranks.quiet_other_ranks()  # before the imports below, which print banners
    watch_for_failures()  # a rank across machines: stop when one on another machine fails
    check_the_gpu()
    file_layer = config_layer(request)
    spec = request.recipe or file_layer.get("recipe")
    if not spec:
        raise KitError("which recipe? give one (kit train gsm8k), or a --config file that names it (recipe: ...)")
    recipe = load_recipe(spec, check_tools=False)  # their check imports transformers: after Unsloth
    cfg = run_config(request, recipe, file_layer)
    check_local_files(cfg.data, cfg.eval.path)  # before the plan and the minute Unsloth takes to import
    import_unsloth_first(vllm_standby=cfg.model.vllm_standby)  # the plan reads config.json with transformers
    recipe.toolbox.check()
    rewards = recipe.rewards  # a reward model among them is in the plan
    plan = None if ranks.in_worker() else plan_before_loading(cfg, request.plan_gpu, request.skip_plan, rewards,
                                                              recipe.picture_size)
    if cfg.launch.several_processes and not ranks.in_worker():
        from kit.train.launch.launcher import launch

        return launch(cfg, recipe, list(request.argv), resume=request.resume)
    return train_in_this_process(cfg, recipe, request.resume, plan)


def check_the_gpu() -> None:
    """No GPU seen: say why before the CPU takes over. One the stack cannot run: refused before Unsloth's import,
    which may fail there first."""
    if not has_gpu() and (problem := driver_problem()):
        print(f"train: {problem}")
    if has_gpu() and (problem := live_gpu_problem()):
        raise KitError(f"{problem}. Nothing was loaded.")


def config_layer(request: TrainRequest) -> dict:
    """The --config file's settings (a resumed run's own run.yaml). A finished run's run.yaml reruns that run into
    a new folder, and says which of the files it read have changed since."""
    if request.resume and not request.out:
        raise KitError("--resume needs --out: the folder of the interrupted run")
    config_file = RunDir(request.out).run_file if request.resume else request.config_file
    if not config_file:
        return {}
    layer = read_yaml(config_file)
    if Path(config_file).name == RunDir(".").run_file.name and isinstance(layer.get("launch"), dict):
        layer["launch"].pop("machine_rank", None)  # the main machine's (0), which wrote it: each machine gives its own
    if not request.resume and Path(config_file).name == RunDir(".").run_file.name:
        recorded_out = layer.pop("output_dir", None)
        if recorded_out and ranks.is_main():
            print(f"config: {config_file} records the run in {recorded_out}; this run gets its own folder "
                  f"({request.out or 'outputs/<recipe>-<time>; --out chooses'})")
        for note in changed_inputs(Path(config_file)) if ranks.is_main() else []:
            print(f"config: note: {note}")
    return layer


def run_config(request: TrainRequest, recipe: Recipe, file_layer: dict) -> RunConfig:
    """The recipe's defaults < profile < --config file < flags and overrides."""
    overrides = request.overrides
    if ranks.in_worker():  # started by a launcher: torchrun's counts are the truth (recorded so in run.yaml)
        counts = {"num_processes": ranks.local_world_size()}
        if ranks.several_machines():
            counts |= {"num_machines": ranks.world_size() // ranks.local_world_size(),
                       "machine_rank": ranks.machine_rank()}
        overrides = {**overrides, "launch": {**overrides.get("launch", {}), **counts}}
    elif slurm := slurm_settings(os.environ):  # under SLURM, its machines where the settings name none
        file_layer = {**file_layer, "launch": {**slurm, **file_layer.get("launch", {})}}
    return recipe.config(file_layer, overrides, gpu=has_gpu())


def train_in_this_process(cfg: RunConfig, recipe: Recipe, resume: bool, plan) -> int:
    from kit.train.run import run_training

    try:
        result = run_training(cfg, recipe, resume=resume, plan=plan)
    except Interrupted as stop:
        if ranks.is_main():
            print(stop, file=sys.stderr)
        record_interruption()
        return 130
    ranks.leave()
    if result.failed:
        record_failure(KitError(f"saved outputs failed their checks ({', '.join(result.failed)}): see "
                                      f"{result.output_dir}"))
        return 1
    return 0
