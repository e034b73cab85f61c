"""`kit check RECIPE`: will GRPO learn? The learnability check `kit train` runs before its first GRPO step, alone.

    python -m kit check digit_sum --profile smoke
    python -m kit check gsm8k --model unsloth/Qwen2.5-3B-Instruct --config my.yaml grpo.num_generations=16

The settings as `kit train` layers them, the checks it makes before loading (rewards, data), the model loaded as
training loads it, then kit.train.learnability on the first GRPO stage's settings and rewards. It writes nothing. A
run with an SFT warm start before GRPO is checked here on the model before that warm start: `kit train` checks
again after it, on the model GRPO starts from.
"""

from __future__ import annotations

from kit.checks.learnability import Learnability
from kit.checks.model_rewards import prepare_model_rewards
from kit.config import RunConfig
from kit.config.stages import stage_plans
from kit.data import drop_long_prompts, load_rows
from kit.errors import KitError
from kit.models import import_unsloth_first, loader
from kit.recipe import Recipe
from kit.rewards.code import prepare_code_rewards
from kit.train.learnability import check_learnability
from kit.train.prepare import held_out_rows, reward_bundles
from kit.train.run import prepare_tools
from kit.train.start import TrainRequest, config_layer, run_config


def check_command(request: TrainRequest, recipe: Recipe) -> Learnability:
    """Print the verdict for the recipe with these settings; the report, for the caller to read."""
    cfg = run_config(request, recipe, config_layer(request))
    plans = stage_plans(cfg)
    grpo = next((plan for plan in plans if plan.kind == "grpo"), None)
    if grpo is None:
        raise KitError("the run has no GRPO stage (`stages`): the learnability check has nothing to check")
    report = check_stage(grpo.cfg, recipe, reward_bundles(cfg, recipe, plans)[1][grpo.name])
    print("\n".join(report.lines()))
    kinds = [plan.kind for plan in plans]
    if "sft" in kinds[: kinds.index("grpo")]:
        print("learnability: this was the model before the SFT warm start; `kit train` checks again after it")
    return report


def check_stage(cfg: RunConfig, recipe: Recipe, rewards) -> Learnability:
    """What `kit train` does up to its first GRPO step, less the output folder and the warm start."""
    import_unsloth_first(vllm_standby=cfg.model.vllm_standby)
    recipe.toolbox.check()
    prepare_model_rewards(recipe.rewards.funcs, cfg.judge, cfg.reward_models)
    rows = load_rows(recipe, cfg.data, rewards)
    prepare_code_rewards(cfg.code_isolation, [*rewards.funcs, *recipe.toolbox.functions()], rows)
    rows = held_out_rows(cfg, recipe, rows, rewards)[0]  # training rows only, as the trainer samples them
    print(f"check: loading {cfg.model.name}, then {cfg.grpo.learnability_prompts} prompts x "
          f"{cfg.grpo.num_generations} completions")
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    tools = prepare_tools(cfg, recipe, tokenizer)
    rows = drop_long_prompts(rows, tokenizer, cfg.data.max_prompt_length, tools)
    return check_learnability(cfg, recipe, rewards, model, tokenizer, rows, warm_started=False)
