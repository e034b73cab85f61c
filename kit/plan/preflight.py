"""The plan as the commands use it: `kit train` checks it before loading, `kit plan` prints it.

    plan = plan_for_run(cfg, gpu="T4")   # None when there is no GPU to plan for (a CPU smoke run)
    text, plan = plan_page(cfg, gpu=None, stack=None, rewards=recipe.rewards)   # kit plan: the breakdown, other GPUs

With the recipe's rewards, a reward model among them (kit.rewards.reward_model) is counted too: its weights and
its scoring pass (kit.plan.reward_models).
"""

from __future__ import annotations

from kit.config import RunConfig
from kit.errors import KitError
from kit.plan.gpus import GPUS, STACK_MIN_CAPABILITY, gpu_memory_gib, this_gpu, too_old
from kit.plan.memory import Term
from kit.plan.page import describe
from kit.plan.planner import Plan, assess, make_plan
from kit.plan.reward_models import reward_model_terms
from kit.plan.shapes import read_shape


def target_gpu(requested: str | None) -> tuple[str, float] | None:
    """--gpu when given, else the GPU this process sees, else None."""
    if requested:
        return requested, gpu_memory_gib(requested)
    return this_gpu()


def plan_for_run(cfg: RunConfig, gpu: str | None = None, stack: str | None = None,
                 reward_terms: tuple[Term, ...] = (), picture_size: tuple[int, int] | None = None) -> Plan | None:
    """`picture_size`: (width, height) of a vision recipe's pictures, which sizes their image tokens."""
    target = target_gpu(gpu)
    if target is None:
        return None
    return make_plan(cfg, read_shape(cfg.model.name, picture_size), *target, stack=stack or default_stack(cfg),
                     reward_terms=reward_terms)


def plan_page(cfg: RunConfig, gpu: str | None, stack: str | None, rewards=None,
              picture_size: tuple[int, int] | None = None) -> tuple[str, Plan]:
    """`kit plan`: the breakdown on the target GPU (a T4 when there is none), then the verdict on others.
    `rewards`: the recipe's RewardBundle, whose reward models are counted."""
    lines = []
    if target_gpu(gpu) is None:
        lines.append("no GPU here and no --gpu: planning for a T4 (Colab / Kaggle free tier)\n")
        gpu = "T4"
    stack = stack or default_stack(cfg)
    terms, notes = reward_model_terms(rewards, loaded_weights(cfg), cfg.reward_models)
    plan = plan_for_run(cfg, gpu, stack, terms, picture_size)
    plan.notes += notes
    shape = plan.shape
    others = [f"{name} {short_verdict(assess(cfg, shape, name, gib, stack, terms))}" for name, gib in GPUS.items()]
    lines += [describe(plan), f"\nother GPUs: {', '.join(others)}"]
    return "\n".join(lines), plan


def loaded_weights(cfg: RunConfig) -> dict[str, float]:
    """The weights that say which reward models load: the held-out scoring (eval.n > 0) scores with every reward
    of the recipe, a weight-0 one too, and its reward model then stays on the GPU for the run."""
    return {} if cfg.eval.n > 0 else cfg.rewards


def short_verdict(plan: Plan) -> str:
    """The verdict in a word or two; a GPU the stack cannot run on says that rather than "does not fit"."""
    if too_old(plan.gpu):
        return f"too old (compute capability below {STACK_MIN_CAPABILITY})"
    return plan.verdict


def default_stack(cfg: RunConfig) -> str:
    """Several processes load with transformers + PEFT (kit.train.launch): per GPU, what plain TRL needs."""
    return "trl" if cfg.launch.several_processes else "unsloth"


def plan_before_loading(cfg: RunConfig, gpu: str | None, skip: bool, rewards=None,
                        picture_size: tuple[int, int] | None = None) -> Plan | None:
    """Refuse a run that clearly does not fit; say how close a tight one is. Returns the plan, if any.
    `rewards`: the recipe's RewardBundle, whose reward models are counted as `kit plan` counts them."""
    if target_gpu(gpu) is None:  # a CPU run: nothing to plan, no reward model's config to fetch
        return None
    try:
        terms, notes = reward_model_terms(rewards, loaded_weights(cfg), cfg.reward_models)
        plan = plan_for_run(cfg, gpu, reward_terms=terms, picture_size=picture_size)
    except KitError as err:
        if gpu:  # asked for explicitly: the user should hear why it cannot be made
            raise
        print(f"memory plan skipped: {err}")
        return None
    if plan is None:
        return None
    plan.notes += notes
    if plan.refused and not skip:
        raise KitError(f"this run will not fit the GPU; nothing was loaded.\n\n{describe(plan)}\n\n"
                       "Change a setting above, or run anyway with --skip-plan (make train FORCE=1).")
    print(f"memory plan: {plan.verdict}, about {plan.peak_gib:.1f} of {plan.gpu_gib:.1f} GiB on {plan.gpu} "
          f"(python -m kit plan {cfg.recipe} for the breakdown)"
          f"{'; running anyway (--skip-plan)' if plan.refused else ''}")
    for note in plan.notes:  # e.g. vLLM on a T4 not yet verified, standby's share
        print(f"memory plan: note: {note}")
    return plan
