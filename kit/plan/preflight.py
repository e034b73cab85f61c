"""The plan as the train command uses it: on the GPU it will run on, before anything is loaded.

    plan = plan_for_run(cfg, gpu="T4")   # None when there is no GPU to plan for (a CPU smoke run)
"""

from __future__ import annotations

from kit.config import RunConfig
from kit.errors import KitError
from kit.plan.gpus import gpu_memory_gib, this_gpu
from kit.plan.planner import Plan, describe, make_plan
from kit.plan.shapes import read_shape


def target_gpu(requested: str | None) -> tuple[str, float] | None:
    """--gpu when given, else the GPU this process sees, else None."""
    if requested:
        return requested, gpu_memory_gib(requested)
    return this_gpu()


def plan_for_run(cfg: RunConfig, gpu: str | None = None) -> Plan | None:
    target = target_gpu(gpu)
    if target is None:
        return None
    return make_plan(cfg, read_shape(cfg.model.name), *target, stack=default_stack(cfg))


def default_stack(cfg: RunConfig) -> str:
    """Several processes load with transformers + PEFT (kit.launch): per GPU, what plain TRL needs."""
    return "trl" if cfg.launch.num_processes > 1 else "unsloth"


def check_before_training(cfg: RunConfig, gpu: str | None, skip: bool) -> Plan | None:
    """Refuse a run that clearly does not fit; say how close a tight one is. Returns the plan, if any."""
    try:
        plan = plan_for_run(cfg, gpu)
    except KitError as err:
        if gpu:  # asked for explicitly: the user should hear why it cannot be made
            raise
        print(f"memory plan skipped: {err}")
        return None
    if plan is None:
        return None
    if plan.refused and not skip:
        raise KitError(f"this run will not fit the GPU; nothing was loaded.\n\n{describe(plan)}\n\n"
                       "Change a setting above, or run anyway with --skip-plan (make train FORCE=1).")
    print(f"memory plan: {plan.verdict}, about {plan.peak_gib:.1f} of {plan.gpu_gib:.1f} GiB on {plan.gpu} "
          f"(python -m kit plan {cfg.recipe} for the breakdown){'; running anyway (--skip-plan)' if plan.refused else ''}")
    return plan
