"""The GRPO stage: TRL's GRPOConfig from the `grpo` section, the trainer with the kit's callbacks, training.

A checkpoint every grpo.save_steps and every grpo.save_minutes; a run resumed from one continues there.
"""

from __future__ import annotations

from pathlib import Path

from kit import ranks
from kit.config import SHARDED, GRPOSection, RunConfig
from kit.models import loader  # imports Unsloth, which must patch TRL before TRL is used
from kit.outputs import RunDir, write_run_section
from kit.rewards.bundle import RewardBundle
from kit.rewards.guard import CheckedReward
from kit.tools.toolbox import Toolbox
from kit.train.checkpoints import trained_to_plan
from kit.train.stages.contract import StageInputs
from kit.train.stages.settings import (
    CHECKPOINTING_SET_BY,
    GRPO_PINNED_DEFAULTS,
    checked_extra,
    checkpointing,
    multi_process_checkpointing,
    pinned_defaults,
)

# What the kit sets in GRPOConfig itself, and where the user changes it instead.
KIT_SETS = {"output_dir": "--out", "seed": "the top-level setting seed",
            "reward_weights": "the recipe's weights (rewards.<name>=W)", "save_strategy": "grpo.save_steps",
            **CHECKPOINTING_SET_BY}
# The `grpo` settings the kit acts on itself, not TRL: a checkpoint callback, the tool budget, the learnability check.
KIT_ONLY = {"save_minutes", "tool_calls_per_turn", "tool_seconds_per_rollout", "memory_probe", "learnability_check",
            "learnability_prompts"}
TRL_EPSILON = 0.2  # GRPOConfig's clip range
CISPO_EPSILON_HIGH = 5.0  # CISPO's cap on the importance weight: ScaleRL's value, as TRL's docs and Unsloth give it
# loss_type gspo is the kit's name; TRL 1.15 has no such loss_type. Its GSPO (the paper index's recipe) is loss_type
# grpo with one importance ratio per completion, the mean of its tokens' log-ratios; the clip range is the GSPO
# paper's (v2, section 5.1), for that one ratio.
GSPO = {"loss_type": "grpo", "importance_sampling_level": "sequence"}
GSPO_EPSILON, GSPO_EPSILON_HIGH = 3e-4, 4e-4


def arguments(inputs: StageInputs):
    return grpo_args(inputs.cfg, inputs.out, inputs.rewards, inputs.checkpoints)


def grpo_args(cfg: RunConfig, out: RunDir | Path, rewards: RewardBundle, checkpoints: Path | None = None):
    """TRL's GRPOConfig from the `grpo` section; `grpo.extra` passes any other field through. Checkpoints go to
    OUT/checkpoints, or the stage's own folder (a run with several GRPO stages)."""
    from trl import GRPOConfig

    extra = checked_extra("grpo", cfg.grpo.extra, GRPOConfig, KIT_SETS)
    args = GRPOConfig(
        output_dir=str(checkpoints or RunDir(out).checkpoints),
        seed=cfg.seed,
        reward_weights=rewards.weights,
        save_strategy="steps",
        **{**decided_settings(cfg), **rank_settings(cfg), **extra},
    )
    return multi_process_checkpointing(args, extra)


def decided_settings(cfg: RunConfig) -> dict:
    """Every GRPOConfig value the kit decides for a run of one process: the pinned defaults, the `grpo` section
    resolved, checkpointing. bench.gpu_check gives the same to each hand-written side."""
    return {**grpo_pinned_defaults(), **trainer_settings(cfg.grpo), **checkpointing(cfg)}


def grpo_pinned_defaults() -> dict:
    from trl import GRPOConfig

    return {**pinned_defaults(GRPOConfig), **GRPO_PINNED_DEFAULTS}


def trainer_settings(g: GRPOSection) -> dict:
    """The `grpo` section as GRPOConfig fields, with no value left for a trainer to fill in.

    Unsloth's GPU-side GRPOConfig fills unset values its own way (epsilon_high None becomes 0.28 with an
    explicit dapo, 5.0 with cispo) and its CPU backend does not patch TRL at all, so a value left to it would
    make one config train differently on a GPU and on a CPU. tests/train/stages/test_unsloth_config_patch.py applies
    Unsloth's GPU patch on the CPU and checks that no setting changes under it.
    """
    settings = g.model_dump(exclude={"extra", *KIT_ONLY})
    settings["epsilon"], settings["epsilon_high"] = resolved_clip(g)
    if g.loss_type == "gspo":  # never passed to TRL as a loss_type
        settings |= GSPO
    return settings


def resolved_clip(g: GRPOSection) -> tuple[float, float]:
    """(epsilon, epsilon_high) as the trainer gets them: an unset one takes the loss's value."""
    if g.loss_type == "gspo" and g.epsilon is None:
        return GSPO_EPSILON, GSPO_EPSILON_HIGH if g.epsilon_high is None else g.epsilon_high
    low = TRL_EPSILON if g.epsilon is None else g.epsilon
    if g.epsilon_high is not None:
        return low, g.epsilon_high
    return low, CISPO_EPSILON_HIGH if g.loss_type == "cispo" else low  # TRL's own rule: the lower clip


def held_settings(cfg: RunConfig, trainer_args) -> dict:
    """What the constructed trainer holds for each `grpo` setting (and grpo.extra key): run.yaml's record,
    read back from the trainer rather than from the config, so a value a library changed shows there."""
    names = [*trainer_settings(cfg.grpo), *grpo_pinned_defaults(), *cfg.grpo.extra]
    return {name: plain(getattr(trainer_args, name)) for name in names if hasattr(trainer_args, name)}


def plain(value):
    """A trainer value as YAML can hold it: enums by their value, tuples as lists."""
    return list(value) if isinstance(value := getattr(value, "value", value), tuple) else value


def rank_settings(cfg: RunConfig) -> dict:
    """GRPOConfig fields for a rank of a multi-process run, where Unsloth's loader did not set them up.

    vLLM runs inside each rank (colocate); for a separate vLLM server started with `trl vllm-serve`, set
    grpo.extra.vllm_mode=server (docs/several-gpus.md).
    """
    if not ranks.in_worker():
        return {}
    # non-reentrant checkpointing is set once the config is built (multi_process_checkpointing): Unsloth rewrites it
    settings = {"ddp_find_unused_parameters": cfg.model.full_finetuning}  # every LoRA weight gets a gradient
    if loader.fast_inference_available(cfg.model):
        settings |= {"use_vllm": True, "vllm_mode": "colocate",
                     "vllm_gpu_memory_utilization": cfg.model.gpu_memory_utilization,  # the plan checks this share
                     "vllm_max_model_length": cfg.model.max_seq_length,  # not the model's whole context
                     "vllm_enable_sleep_mode": cfg.model.vllm_standby}
    return settings


def train(inputs: StageInputs, args, stopper):
    """GRPO from the start or from `checkpoint`; the GPU's real peak memory goes beside the plan in run.yaml.

    A checkpoint that already holds every planned step (the run stopped after training, before its outputs
    were written) is loaded and not trained on: the trainer would train one step past the plan.
    """
    from kit.monitor.finite import non_finite_stop
    from kit.monitor.gaming import watch_for_gaming
    from kit.plan.probe import MemoryProbe, probe_applies
    from kit.plan.record import MemoryRecorder
    from kit.train.evaluation import HeldOutCurve, check_every
    from kit.train.learnability import before_grpo
    from kit.train.resume import SaveAtEnd, SaveEveryMinutes

    cfg, out, checkpoint = inputs.cfg, inputs.out, inputs.checkpoint
    before_grpo(inputs)  # will it learn? said before the first step (grpo.learnability_check)
    trainer = build_trainer(cfg, args, inputs.model, inputs.tokenizer, inputs.rows, inputs.rewards, out,
                            inputs.recipe.toolbox, stage=inputs.name)
    if ranks.is_main():
        record_held_settings(out, inputs.name, held_settings(cfg, trainer.args))
    if checkpoint is not None and trained_to_plan(cfg.grpo.max_steps, checkpoint):
        print(f"resume: {checkpoint} holds every planned step of {inputs.name}: its weights are loaded and the "
              "run goes on from there")
        trainer._load_from_checkpoint(str(checkpoint))  # the weights, as train(resume_from_checkpoint=) loads them
        return trainer
    trainer.add_callback(stopper)
    for callback in trainer.callback_handler.callbacks:  # a judge that stays down stops the run as Ctrl-C does
        if hasattr(callback, "stopper"):
            callback.stopper = stopper
    if inputs.stage and not inputs.stage.only_grpo:  # a later stage starts from this one's last step
        trainer.add_callback(SaveAtEnd())
    if cfg.grpo.save_minutes:
        trainer.add_callback(SaveEveryMinutes(cfg.grpo.save_minutes))
    if ranks.is_main():
        trainer.add_callback(MemoryRecorder(out.run_file, inputs.plan))
    if probe_applies(cfg) and not inputs.recipe.toolbox and not ranks.in_worker():  # kit/plan/probe.py says why
        trainer.add_callback(MemoryProbe(trainer, out.run_file, inputs.plan, cfg.grpo.optim))
    curve = None
    if (every := check_every(cfg)) and inputs.held_out is not None and inputs.held_out.rows is not None:
        trainer.add_callback(curve := HeldOutCurve(inputs.held_out, inputs.name, every, out.metrics))
    watch_for_gaming(trainer, inputs.recipe, inputs.rewards, curve)
    try:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    except RuntimeError as err:  # sampling from weights that overflowed, before the guard's step-end check
        if "inf" not in str(err) or "nan" not in str(err):
            raise
        raise non_finite_stop("grpo", cfg.grpo.learning_rate, trainer.state.global_step + 1,
                              "generation met inf or nan probabilities") from err
    return trainer


def record_held_settings(out: RunDir, stage: str, settings: dict) -> None:
    """run.yaml's `trainer` section: what each GRPO stage's trainer held, by the stage's name."""
    import yaml

    held = (yaml.safe_load(out.run_file.read_text()) or {}).get("trainer") or {}
    write_run_section(out.run_file, "trainer", {**held, stage: settings})


def build_trainer(cfg: RunConfig, args, model, tokenizer, dataset, rewards: RewardBundle, out: RunDir | Path,
                  toolbox: Toolbox | None = None, stage: str = "grpo"):
    """TRL's GRPOTrainer with the kit's callbacks: metrics file, health checks, samples, per-rank counts.

    A recipe's tools or environment go to TRL as one environment class (kit.tools.toolbox), each rollout within
    its tool budget: TRL's trainer runs the multi-turn loop."""
    from trl import GRPOTrainer

    from kit.models.generate import uses_vllm
    from kit.models.vision_models import is_processor, placeholder_ban
    from kit.monitor.console import use_step_lines
    from kit.monitor.finite import FiniteGuard
    from kit.monitor.health import HealthCallback, HealthMonitor
    from kit.monitor.metrics import MetricsFile
    from kit.monitor.pace import StepPace
    from kit.monitor.samples import SampleLogger
    from kit.monitor.tool_health import ToolStats
    from kit.rewards.traits import documented_range

    out, toolbox = RunDir(out), toolbox or Toolbox()
    read = sorted({c for columns in rewards.columns_needed().values() for c in columns if c != "prompt"})
    samples = SampleLogger(out.samples, cfg.monitor.sample_every, cfg.monitor.samples, cfg.seed, dataset, read)
    ranges = {r.name: documented_range(r.fn) for r in rewards.rewards}
    health = HealthCallback(HealthMonitor(cfg.grpo.beta, cfg.monitor.window, ranges, tools=bool(toolbox),
                                          weights=dict(zip(rewards.names, rewards.weights)), judge=cfg.judge),
                            out.diagnostics)
    tool_stats = ToolStats() if toolbox else None  # first: it adds tools/* to the logs the others read
    callbacks = [*filter(None, [tool_stats]), MetricsFile(out.metrics, stage), health,
                 FiniteGuard(stage, cfg.grpo.learning_rate), StepPace()]
    callbacks += [samples] if cfg.monitor.samples else []
    funcs = [CheckedReward(fn) for fn in rewards.funcs]  # a broken reward stops the run with one line
    if ranks.in_worker():  # every rank counts what it did; rank 0 writes it all to OUT/distributed.json
        from kit.monitor.distributed import CountedReward, RankReport

        funcs = [CountedReward(funcs[0]), *funcs[1:]]
        callbacks.append(RankReport(out.distributed, funcs[0], cfg.launch.launcher))
    if is_processor(tokenizer):  # a vision-language model: its completions never hold an image placeholder
        args.generation_kwargs = placeholder_ban(tokenizer, args.generation_kwargs, vllm=uses_vllm(model))
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=funcs, args=args,
                          train_dataset=dataset, callbacks=callbacks, **tool_arguments(cfg, toolbox, tokenizer))
    samples.trainer = trainer
    if tool_stats:
        tool_stats.trainer = trainer
    use_step_lines(trainer, stage)  # one line a step; the whole dict is in metrics.jsonl (and shown with -v)
    return trainer


def tool_arguments(cfg: RunConfig, toolbox: Toolbox, tokenizer) -> dict:
    """The recipe's tools for TRL, each rollout within its budget; the replies they answer parsed safely."""
    if not toolbox:
        return {}
    from kit.tools.budget import ToolBudget
    from kit.tools.reply_guard import guard_replies

    guard = guard_replies(tokenizer)  # its count of replies tells the budget a new turn
    budget = ToolBudget(cfg.grpo.tool_calls_per_turn, cfg.grpo.tool_seconds_per_rollout)
    return toolbox.trainer_arguments(budget, turn=lambda: guard.replies)


def gather_sharded_adapter(cfg: RunConfig, trainer, out: RunDir) -> bool:
    """ZeRO-3 / FSDP: each rank holds a shard; the trainer gathers the adapter and rank 0 writes OUT/adapter."""
    if not (ranks.in_worker() and cfg.launch.launcher in SHARDED):
        return False
    trainer.save_model(str(out.adapter))
    return True
