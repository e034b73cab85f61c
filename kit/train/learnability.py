"""The learnability check's groups (kit.checks.learnability): K training prompts, grpo.num_generations completions
each, sampled from the model as GRPO starts from it and scored with the run's rewards as TRL calls them.

    report = check_learnability(cfg, recipe, rewards, model, tokenizer, rows, warm_started=True)

Here, not in kit/checks/: sampling needs kit.models (generation) and kit.eval (multi-turn rollouts with tools),
which sit above kit.checks; the report's maths and words stay there, free of models. The sampling is GRPO's: its
temperature (and grpo.extra top_p), grpo.max_completion_length, grpo.chat_template_kwargs, the prompt token ids
kit.models.generate renders as the trainer does, and with tools TRL's multi-turn rules (kit.eval.rollout).
"""

from __future__ import annotations

from kit import ranks
from kit.checks.learnability import Learnability, learnability
from kit.checks.rewards_check import environment_reward
from kit.checks.trial import spread
from kit.config import SHARDED, RunConfig
from kit.config.stages import entry_kind_and_settings, stage_plans
from kit.data.row_pictures import image_column, row_images
from kit.eval.evaluate import assistant_text, reward_kwargs
from kit.eval.rollout import roll_out
from kit.models.generate import Sampling, generate_ids, live_adapter_request, prompt_token_ids
from kit.models.vision_generate import generate_with_images
from kit.models.vision_models import text_tokenizer
from kit.outputs import write_run_section
from kit.recipe import Recipe
from kit.rewards.bundle import Reward, RewardBundle
from kit.rewards.guard import CheckedReward
from kit.rewards.traits import documented_range
from kit.tools.budget import ToolBudget
from kit.tools.stats import tool_stats
from kit.train.stages.contract import StageInputs
from kit.train.training_state import training_state_kept


def before_grpo(inputs: StageInputs) -> Learnability | None:
    """The check at the start of the run's first GRPO stage (after a warm start): its lines on the console, its
    record in run.yaml. Off with grpo.learnability_check false; skipped on a resumed stage, which has trained."""
    cfg = inputs.cfg
    kinds = [entry_kind_and_settings(e)[0] for e in cfg.stages]
    first_grpo = inputs.stage is None or inputs.stage.name == first_named(cfg, "grpo")
    if not cfg.grpo.learnability_check or inputs.checkpoint is not None or not first_grpo:
        return None
    if ranks.in_worker():
        if cfg.launch.launcher in SHARDED:  # no process holds the whole model to sample from
            return None
        try:  # rank 0 samples while the others wait
            return checked_here(inputs, kinds) if ranks.is_main() else None
        finally:
            ranks.wait_for_everyone()
    return checked_here(inputs, kinds)


def checked_here(inputs: StageInputs, kinds: list[str]) -> Learnability:
    warm_started = "sft" in kinds[: kinds.index("grpo")]
    report = check_learnability(inputs.cfg, inputs.recipe, inputs.rewards, inputs.model, inputs.tokenizer,
                                inputs.rows, warm_started)
    print("\n".join(report.lines()))
    if not report.learns:
        print("learnability: this is a warning; training goes on (grpo.learnability_check=false skips the check)")
    write_run_section(inputs.out.run_file, "learnability", report.record())
    return report


def first_named(cfg: RunConfig, kind: str) -> str:
    return next(plan.name for plan in stage_plans(cfg) if plan.kind == kind)


def check_learnability(cfg: RunConfig, recipe: Recipe, rewards: RewardBundle, model, tokenizer, rows,
                       warm_started: bool = False) -> Learnability:
    """Sample and score the groups; the report says whether GRPO has anything to learn from them."""
    g = cfg.grpo
    picked = rows.select(spread(len(rows), g.learnability_prompts))
    records = [row for row in picked.to_list() for _ in range(g.num_generations)]  # as TRL repeats each prompt
    column = image_column(picked)
    images = [row_images(v) for v in picked[column] for _ in range(g.num_generations)] if column else None
    sampling = grpo_sampling(cfg)
    with training_state_kept(model, tokenizer):
        completions, environments, cut = sample(model, tokenizer, recipe, records, sampling, cfg.eval.batch_size,
                                                images)
    scored = [*rewards.rewards]
    if recipe.toolbox.rewarded_by_environment:  # TRL's reward from the environment, as `kit rewards check` has it
        scored.append(Reward(environment_reward(recipe.toolbox.reward_name), 1.0))
    texts = [assistant_text(c) for c in completions]
    kwargs = reward_kwargs(records, texts, tokenizer, environments)
    size = g.num_generations
    scores = {r.name: grouped(CheckedReward(r.fn).call(completions, kwargs, where=" in the learnability check"),
                              size) for r in scored}
    tools = tool_stats_per_completion(completions) if recipe.toolbox else None
    return learnability(scores, {r.name: r.weight for r in scored}, cut, tools, warm_started,
                        g.max_completion_length, {r.name: documented_range(r.fn)[1] for r in scored})


def grpo_sampling(cfg: RunConfig) -> Sampling:
    """GRPO's sampling as the trainer does it: its temperature and length cap, a seed of the run's."""
    g = cfg.grpo
    return Sampling(max_new_tokens=g.max_completion_length, temperature=g.temperature,
                    top_p=g.extra.get("top_p", 1.0), seed=cfg.seed, chat_template_kwargs=g.chat_template_kwargs or {},
                    max_tool_rounds=g.max_tool_calling_iterations,
                    tool_budget=ToolBudget(g.tool_calls_per_turn, g.tool_seconds_per_rollout))


def sample(model, tokenizer, recipe: Recipe, records: list[dict], sampling: Sampling, batch_size: int,
           images: list[list] | None = None):
    """(completions as chat messages, their environments or None, which were cut at the length cap); `images`:
    each record's pictures, decoded, for a vision-language model."""
    lora = live_adapter_request(model)
    if recipe.toolbox:
        rollouts = roll_out(model, tokenizer, records, recipe.toolbox, sampling, sampling.max_tool_rounds,
                            batch_size, lora, progress=False)
        completions = [r.messages for r in rollouts]
        environments = [r.environment for r in rollouts] if recipe.toolbox.environment is not None else None
        return completions, environments, rollouts_cut(tokenizer, records, completions, sampling,
                                                       recipe.toolbox.functions())
    if images is not None:  # a vision-language model: each prompt with its pictures, as kit.eval shows them
        texts = generate_with_images(model, tokenizer, [r["prompt"] for r in records], images, sampling, batch_size,
                                     progress=False)
        text_side = text_tokenizer(tokenizer)  # the reply re-tokenized: its EOS is gone, so at the cap means cut
        cut = [len(text_side(t, add_special_tokens=False).input_ids) >= sampling.max_new_tokens for t in texts]
        return [[{"role": "assistant", "content": t}] for t in texts], None, cut
    prompts = prompt_token_ids(tokenizer, [r["prompt"] for r in records], sampling.chat_template_kwargs)
    ids = generate_ids(model, tokenizer, prompts, sampling, batch_size, lora, progress=False)
    texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
    cut = [tokenizer.eos_token_id not in reply and len(reply) >= sampling.max_new_tokens for reply in ids]
    return [[{"role": "assistant", "content": t}] for t in texts], None, cut


def rollouts_cut(tokenizer, records: list[dict], completions: list[list[dict]], sampling: Sampling, tools: list
                 ) -> list[bool]:
    """A multi-turn completion is cut when it used the whole budget (its turns and tool results), counted as
    kit.eval.rollout counts it."""
    kwargs = sampling.chat_template_kwargs
    prompts = [r["prompt"] for r in records]
    start = prompt_token_ids(tokenizer, prompts, kwargs, tools)
    whole = prompt_token_ids(tokenizer, [p + c for p, c in zip(prompts, completions)], kwargs, tools)
    return [len(w) - len(s) >= sampling.max_new_tokens for w, s in zip(whole, start)]


def tool_stats_per_completion(completions: list[list[dict]]) -> list[bool]:
    """Which completions make a tool call that parses (kit.tools.stats' `calling`, one completion at a time)."""
    return [tool_stats([c])["calling"] > 0 for c in completions]


def grouped(values: list, size: int) -> list[list]:
    return [values[i : i + size] for i in range(0, len(values), size)]

