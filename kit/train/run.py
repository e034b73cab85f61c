"""The training run, as a short list of named steps: load, prepare, train, save.

    python -m kit train gsm8k --out outputs/gsm8k-run grpo.max_steps=100

Output layout (stable, other tools read it):
    OUT/run.yaml        resolved config + package versions: re-run with `--config OUT/run.yaml`
    OUT/metrics.jsonl   one JSON object per logged step (reward, reward_std, rewards/<name>/mean, ...)
    OUT/eval.json       held-out scores before and after training (eval.n prompts; 0 turns it off)
    OUT/adapter/        the LoRA adapter + tokenizer
    OUT/merged/         the adapter merged into 16-bit weights; loads with plain transformers
    OUT/checkpoints/    trainer checkpoints every grpo.save_minutes and grpo.save_steps (and on Ctrl-C / SIGTERM;
                        --resume continues from the newest complete one)
    OUT/.run.lock       held while a run writes to OUT: a second run into the same OUT is refused
    OUT/report.md       timings, eval table, health diagnostics, plots, samples, config
    OUT/plots/          run.png, metrics.png;  OUT/samples.jsonl, OUT/diagnostics.jsonl
    OUT/distributed.json  (more than one process) what each rank did: steps, completions, weight norms

With more than one process (kit.launch), every rank runs this module and rank 0 alone writes the files
above; inside checkpoints, the trainer also keeps one RNG state per rank (and DeepSpeed its shards).
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from kit.models import training as loader  # imports Unsloth, which must patch TRL before TRL is used
from kit.train.checkpoints import step_of, trained_to_plan
from kit.config import SAMPLE_DATA, SMOKE, RunConfig
from kit.data import drop_long_prompts, load_eval_rows, load_rows
from kit.env import package_versions
from kit.errors import KitError
from kit import ranks
from kit.config import SHARDED
from kit.models.names import TINY_PREFIX
from kit.train.output_folder import claim_output, require_writable_folder
from kit.recipe import Recipe
from kit.rewards.bundle import RewardBundle
from kit.rewards.code import prepare_code_rewards
from kit.rewards.guard import CheckedReward
from kit.rewards.guard import check_before_training as check_rewards_before_training
from kit.train.run_lock import hold_run_lock

# Keys the kit sets itself; grpo.extra may not override them.
_KIT_OWNED = {"output_dir", "seed", "reward_weights", "save_strategy"}


@dataclass
class PreparedRun:
    rewards: RewardBundle
    rows: object
    held_out: object
    out: Path
    stage_args: dict
    sandbox: str | None = None  # the code sandbox's isolation, when rewards run model code


@dataclass
class RunResult:
    output_dir: Path
    adapter_dir: Path | None
    merged_dir: Path | None
    seconds: float
    gguf_verified: bool = True


def seconds_since_start() -> float:
    """Wall time of this process so far: imports and model building count, as the user waited for them."""
    import psutil

    return time.time() - psutil.Process().create_time()


def default_output_dir(recipe_name: str) -> Path:
    return Path("outputs") / f"{recipe_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def output_path(cfg: RunConfig, recipe: Recipe) -> Path:
    """Where this run writes; what it may find there is checked once it holds the folder (kit.train.output_folder)."""
    if ranks.in_worker() and not cfg.output_dir:  # each rank would pick its own timestamped default
        raise KitError("a multi-process run needs --out: start it with kit train --num-processes N, "
                       "or pass --out to every process")
    out = Path(cfg.output_dir) if cfg.output_dir else default_output_dir(recipe.name)
    if ranks.is_main():  # a file in OUT's place or a folder it cannot write to: refused before loading
        require_writable_folder(out)
    return out


def write_run_file(out: Path, cfg: RunConfig) -> None:
    """The resolved config (loadable with --config) and, under `versions`, what it ran with."""
    record = cfg.model_dump(mode="json")
    record["output_dir"] = str(out)
    text = yaml.safe_dump(record, sort_keys=False)
    text += "# what this run used; ignored when the file is read back as a config\n"
    text += yaml.safe_dump({"versions": package_versions()}, sort_keys=False)
    (out / "run.yaml").write_text(text)


def grpo_args(cfg: RunConfig, out: Path, rewards: RewardBundle):
    """TRL's GRPOConfig from the `grpo` section; `grpo.extra` passes any other field through."""
    from trl import GRPOConfig

    g = cfg.grpo
    known = set(GRPOConfig.__dataclass_fields__)
    unknown = sorted(set(g.extra) - known)
    if unknown:
        raise KitError(f"grpo.extra.{unknown[0]}: not a GRPOConfig setting in this TRL version")
    owned = sorted(set(g.extra) & (_KIT_OWNED | set(type(g).model_fields)))
    if owned:
        raise KitError(f"grpo.extra.{owned[0]}: set it as grpo.{owned[0]} (or let the kit set it), not in extra")
    settings = g.model_dump(exclude={"extra", "save_minutes"})  # save_minutes: the kit's callback, not TRL's
    return GRPOConfig(
        output_dir=str(out / "checkpoints"),
        seed=cfg.seed,
        reward_weights=rewards.weights,
        save_strategy="steps",
        **settings,
        **{**rank_settings(cfg), **g.extra},
    )


def rank_settings(cfg: RunConfig) -> dict:
    """GRPOConfig fields for a rank of a multi-process run, where Unsloth's loader did not set them up.

    vLLM runs inside each rank (colocate); for a separate vLLM server started with `trl vllm-serve`, set
    grpo.extra.vllm_mode=server (README, "More than one GPU").
    """
    if not ranks.in_worker():
        return {}
    settings = {"gradient_checkpointing": cfg.model.gradient_checkpointing != "false",
                "gradient_checkpointing_kwargs": {"use_reentrant": False},  # DDP cannot re-enter the graph
                "ddp_find_unused_parameters": cfg.model.full_finetuning}  # every LoRA weight gets a gradient
    if loader.fast_inference_available(cfg.model):
        settings |= {"use_vllm": True, "vllm_mode": "colocate",
                     "vllm_gpu_memory_utilization": cfg.model.gpu_memory_utilization,  # the plan checks this share
                     "vllm_max_model_length": cfg.model.max_seq_length}  # not the model's whole context
    return settings


def prepare_run(cfg: RunConfig, recipe: Recipe) -> PreparedRun:
    """What can be checked before a model is loaded: rewards, data, trainer arguments.

    Config and data errors surface here, before anything is written (and, for several processes,
    before any of them starts). The kit's tiny model, if used, is built here once. The output folder
    is checked after this, under its lock (`claim_output`).
    """
    rewards = recipe.rewards.reweighted(cfg.rewards).with_adaptive(cfg.adaptive_rewards)
    rows = load_rows(recipe, cfg.data, rewards)
    sandbox = prepare_code_rewards(cfg.code_isolation, rewards.funcs, rows)
    check_rewards_before_training(rewards.funcs, rows)
    held_out = load_eval_rows(recipe, cfg.data, cfg.eval, rewards)
    out = output_path(cfg, recipe)
    stage_args = build_stage_args(cfg, recipe, rows, rewards, out)
    loader.resolve_model_name(cfg.model.name)
    return PreparedRun(rewards, rows, held_out, out, stage_args, sandbox)


def run_training(cfg: RunConfig, recipe: Recipe, resume: bool = False, plan=None) -> RunResult:
    """Check, then train while holding OUT: no second run can write there meanwhile (kit.train.run_lock)."""
    run = prepare_run(cfg, recipe)
    with hold_run_lock(run.out):
        checkpoint = claim_output(cfg, run.out, resume)
        return train_and_save(cfg, recipe, run, checkpoint, plan)


def train_and_save(cfg: RunConfig, recipe: Recipe, run: PreparedRun, checkpoint: Path | None, plan) -> RunResult:
    """Load -> prepare -> train each stage (evaluating after it) -> save, each a step of its own."""
    rewards, out, resume = run.rewards, run.out, checkpoint is not None
    if resume:
        continue_from(out, checkpoint)
    if ranks.is_main():
        out.mkdir(parents=True, exist_ok=True)
        if not resume:
            write_run_file(out, cfg)
    announce(cfg, recipe, out)
    if run.sandbox:
        print(f"run: code rewards run in the sandbox: {run.sandbox}")
    model, tokenizer = loader.load_model(cfg.model, cfg.seed, sharded=cfg.launch.launcher in SHARDED)
    dataset = drop_long_prompts(run.rows, tokenizer, cfg.data.max_prompt_length)
    timings = {"load": seconds_since_start()}
    evaluate = lambda name: evaluate_held_out(cfg, recipe, model, tokenizer, run.held_out, name)  # noqa: E731
    evaluations = earlier_evaluations(out) if resume else [evaluate("before")]
    save_partial_evaluations(out, evaluations)  # kept for a resumed run's before/after table
    # a resumed run continues GRPO from its checkpoint, which holds everything trained before it
    for stage in ["grpo"] if resume else cfg.stages:
        started = time.perf_counter()
        trainer = train_stage(stage, cfg, recipe, model, tokenizer, dataset, rewards, run.stage_args[stage], out,
                              checkpoint, plan)
        timings[f"{stage} training"] = time.perf_counter() - started
        evaluations.append(evaluate("after" if len(cfg.stages) == 1 else f"after {stage}"))
        save_partial_evaluations(out, evaluations)
    adapter_saved = gather_sharded_adapter(cfg, trainer, out)
    if not ranks.is_main():  # rank 0 holds the whole trained model; it merges and reports alone
        return RunResult(out, None, None, seconds_since_start())
    table = report_evaluation(out, evaluations)
    started = time.perf_counter()
    adapter_dir, merged_dir = save_outputs(cfg, model, tokenizer, out, adapter_saved)
    exported = export_if_asked(cfg, merged_dir)
    timings["save and export"] = time.perf_counter() - started
    timings["whole run"] = seconds_since_start()
    from kit.monitor.report import write_report

    write_report(out, timings, table)
    result = RunResult(out, adapter_dir, merged_dir, seconds_since_start(), exported)
    print_summary(cfg, result)
    return result


def gather_sharded_adapter(cfg: RunConfig, trainer, out: Path) -> bool:
    """ZeRO-3 / FSDP: each rank holds a shard; the trainer gathers the adapter and rank 0 writes OUT/adapter."""
    if not (ranks.in_worker() and cfg.launch.launcher in SHARDED):
        return False
    trainer.save_model(str(out / "adapter"))
    return True


def build_stage_args(cfg: RunConfig, recipe: Recipe, rows, rewards: RewardBundle, out: Path) -> dict:
    """Each stage's trainer arguments, built (and so checked) before anything is loaded."""
    from kit.train.stages.sft import sft_args, sft_dataset

    args = {}
    if "sft" in cfg.stages:
        sft_dataset(recipe, rows.select(range(1)))  # the recipe must know how to write a worked answer
        args["sft"] = sft_args(cfg, out)
    if "grpo" in cfg.stages:
        args["grpo"] = grpo_args(cfg, out, rewards)
    return args


class Interrupted(KitError):
    """Training stopped on a signal after saving a checkpoint."""

    def __init__(self, out: Path, checkpoint: Path | None, cfg: RunConfig):
        if checkpoint is None:  # stopped during the SFT warm start: GRPO has nothing to continue from
            super().__init__("interrupted before GRPO saved a checkpoint, so there is nothing to continue from; "
                             f"start it again with the same command (a new run clears {out} and reuses it)")
            return
        super().__init__(f"interrupted: checkpoint saved in {checkpoint}; continue with: python -m kit train "
                         f"{cfg.recipe} --out {out} --resume   (or: make train RECIPE={cfg.recipe} OUT={out} RESUME=1)")


def train_stage(stage: str, cfg: RunConfig, recipe: Recipe, model, tokenizer, dataset, rewards, args, out: Path,
                checkpoint: Path | None = None, plan=None):
    """One stage; Ctrl-C / SIGTERM inside it saves a checkpoint and raises Interrupted.

    GRPO's first steps also record the GPU's real peak memory next to the plan's estimate in run.yaml.
    """
    from kit.train.checkpoints import guard_checkpoints
    from kit.train.resume import GracefulStop, latest_checkpoint, stop_on_signals

    # a full disk while saving a checkpoint: one line, and no incomplete checkpoint left for --resume to pick
    with stop_on_signals(GracefulStop()) as stopper, guard_checkpoints(out / "checkpoints", model):
        if stage == "sft":
            from kit.train.stages.sft import run_sft

            trainer = run_sft(cfg, recipe, model, tokenizer, dataset, args, out, stopper)
        else:
            trainer = train_grpo(cfg, args, model, tokenizer, dataset, rewards, out, checkpoint, plan, stopper)
    if stopper.requested:
        raise Interrupted(out, latest_checkpoint(out / "checkpoints"), cfg)
    return trainer


def train_grpo(cfg: RunConfig, args, model, tokenizer, dataset, rewards, out: Path, checkpoint: Path | None, plan,
               stopper):
    """GRPO from the start or from `checkpoint`, saving every grpo.save_steps and every grpo.save_minutes.

    A checkpoint that already holds every planned step (the run stopped after training, before its outputs
    were written) is loaded and not trained on: the trainer would train one step past the plan.
    """
    from kit.train.resume import SaveEveryMinutes
    from kit.plan.record import MemoryRecorder

    trainer = build_trainer(cfg, args, model, tokenizer, dataset, rewards, out)
    if checkpoint is not None and trained_to_plan(cfg.grpo.max_steps, checkpoint):
        print(f"resume: {checkpoint} holds every planned step; writing the outputs the stopped run did not")
        trainer._load_from_checkpoint(str(checkpoint))  # the weights, as train(resume_from_checkpoint=) loads them
        return trainer
    trainer.add_callback(stopper)
    if cfg.grpo.save_minutes:
        trainer.add_callback(SaveEveryMinutes(cfg.grpo.save_minutes))
    if ranks.is_main():
        trainer.add_callback(MemoryRecorder(out / "run.yaml", plan))
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    return trainer


def continue_from(out: Path, checkpoint: Path) -> None:
    """Say where GRPO continues; metrics logged after that checkpoint will be logged again."""
    print(f"resume: continuing GRPO from {checkpoint}")
    if ranks.is_main():
        drop_metrics_after(out / "metrics.jsonl", step_of(checkpoint))


def earlier_evaluations(out: Path) -> list:
    """The evaluations the interrupted run finished (kept in eval.json as they were made)."""
    import json

    from kit.eval.evaluate import EvalResult

    if not ranks.is_main():  # rank 0 alone evaluates and keeps the table
        return [None]
    path = out / "eval.json"
    results = json.loads(path.read_text())["results"] if path.exists() else []
    return [EvalResult(**r) for r in results if not r["name"].endswith("grpo") and r["name"] != "after"] or [None]


def save_partial_evaluations(out: Path, evaluations: list) -> None:
    if ranks.is_main() and evaluations and evaluations[0] is not None:
        from kit.eval.evaluate import write_json

        write_json(out / "eval.json", evaluations)


def drop_metrics_after(path: Path, step: int) -> None:
    """Steps logged after the checkpoint will be trained and logged again; keep one record per step."""
    import json

    if not path.exists():
        return
    def retrained(record: dict) -> bool:
        return record.get("stage", "grpo") == "grpo" and record["step"] > step

    kept = [line for line in path.read_text().splitlines() if line.strip() and not retrained(json.loads(line))]
    path.write_text("".join(line + "\n" for line in kept))


def evaluate_held_out(cfg: RunConfig, recipe: Recipe, model, tokenizer, rows, name: str):
    """Score the in-memory model on the held-out rows (the adapter starts at zero: 'before' is the base)."""
    if rows is None:
        return None
    if ranks.in_worker():
        if cfg.launch.launcher in SHARDED:
            print(f"eval: skipped ({name} training): with {cfg.launch.launcher} no single process holds the whole "
                  "model; score the merged model afterwards with python -m kit eval")
            return None
        try:  # rank 0 scores the prompts while the others wait for it
            return evaluate_held_out_here(cfg, recipe, model, tokenizer, rows, name) if ranks.is_main() else None
        finally:
            ranks.wait_for_everyone()
    return evaluate_held_out_here(cfg, recipe, model, tokenizer, rows, name)


def evaluate_held_out_here(cfg: RunConfig, recipe: Recipe, model, tokenizer, rows, name: str):
    from kit.eval.evaluate import evaluate
    from kit.eval.generate import Sampling, live_adapter_request

    print(f"eval: scoring {len(rows)} held-out prompts ({name} training)")
    sampling = Sampling(max_new_tokens=cfg.eval.max_new_tokens or cfg.grpo.max_completion_length, seed=cfg.seed)
    return evaluate(model, tokenizer, recipe, rows, sampling, name, lora_request=live_adapter_request(model),
                    batch_size=cfg.eval.batch_size)


def report_evaluation(out: Path, evaluations: list) -> str | None:
    """The before/after table, OUT/eval.json, and the plots (reward curve + held-out scores, metrics)."""
    from kit.monitor.plots import plot_metrics, plot_run

    table = None
    if evaluations[0] is not None:
        from kit.eval.evaluate import format_table, write_json

        table = format_table(evaluations)
        print(table)
        for earlier, later in zip(evaluations[1:], evaluations[2:]):
            change = 100 * (later.strict_accuracy - earlier.strict_accuracy)
            print(f"eval: held-out strict accuracy {later.name} vs {earlier.name}: {change:+.1f} points")
        write_json(out / "eval.json", evaluations)
    for plot in (plot_run(out), plot_metrics(out)):
        if plot:
            print(f"plot: {plot}")
    return table


def build_trainer(cfg: RunConfig, args, model, tokenizer, dataset, rewards: RewardBundle, out: Path):
    from trl import GRPOTrainer

    from kit.monitor.metrics import MetricsFile
    from kit.monitor.health import HealthCallback, HealthMonitor, SampleLogger

    read = sorted({c for columns in rewards.columns_needed().values() for c in columns if c != "prompt"})
    samples = SampleLogger(out / "samples.jsonl", cfg.monitor.sample_every, cfg.monitor.samples, cfg.seed,
                           dataset, read)
    health = HealthCallback(HealthMonitor(cfg.grpo.beta, cfg.monitor.window), out / "diagnostics.jsonl")
    callbacks = [MetricsFile(out / "metrics.jsonl"), health] + ([samples] if cfg.monitor.samples else [])
    funcs = [CheckedReward(fn) for fn in rewards.funcs]  # a broken reward stops the run with one line
    if ranks.in_worker():  # every rank counts what it did; rank 0 writes it all to distributed.json
        from kit.monitor.ranks import CountedReward, RankReport

        funcs = [CountedReward(funcs[0]), *funcs[1:]]
        callbacks.append(RankReport(out / "distributed.json", funcs[0], cfg.launch.launcher))
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=funcs,
        args=args,
        train_dataset=dataset,
        callbacks=callbacks,
    )
    samples.trainer = trainer
    return trainer


def export_if_asked(cfg: RunConfig, merged_dir: Path | None) -> bool:
    """GGUF files from the merged model when save.formats has gguf; False when verification failed."""
    if "gguf" not in cfg.save.formats or merged_dir is None:
        return True
    from kit.export.gguf.export import export_gguf

    return export_gguf(merged_dir, cfg.save.quant).ok


def save_outputs(cfg: RunConfig, model, tokenizer, out: Path,
                 adapter_saved: bool = False) -> tuple[Path | None, Path | None]:
    """Adapter, merged model (save.formats). `adapter_saved`: the trainer already wrote OUT/adapter."""
    from kit.export.merged import save_adapter, save_full_model, save_merged

    if cfg.model.full_finetuning:  # no adapter: the trained weights are the merged model
        print(f"save: writing the fully fine-tuned model in {cfg.save.merged_dtype} -> {out / 'merged'}")
        base = loader.resolve_model_name(cfg.model.name)
        return None, save_full_model(model, tokenizer, base, out / "merged", cfg.save.merged_dtype)
    adapter_dir = out / "adapter" if adapter_saved else save_adapter(model, tokenizer, out / "adapter")
    merged_dir = None
    if "merged_16bit" in cfg.save.formats:
        print(f"save: merging the adapter into 16-bit ({cfg.save.merged_dtype}) weights -> {out / 'merged'}")
        base = loader.resolve_model_name(cfg.model.name)
        merged_dir = save_merged(adapter_dir, base, out / "merged", cfg.save.merged_dtype)
    if "lora" not in cfg.save.formats:
        import shutil

        shutil.rmtree(adapter_dir)
        adapter_dir = None
    return adapter_dir, merged_dir


def announce(cfg: RunConfig, recipe: Recipe, out: Path) -> None:
    g = cfg.grpo
    prompts = cfg.completions_per_step // g.num_generations
    print(f"run: recipe {recipe.name}, model {cfg.model.name}, profile {cfg.profile}, output {out}")
    print(f"run: {prompts} prompt(s) x {g.num_generations} generations = {cfg.completions_per_step} "
          f"completions per step, max_steps {g.max_steps}")
    if cfg.profile == SMOKE:
        model = "a tiny model built on the spot" if cfg.model.name.startswith(TINY_PREFIX) else cfg.model.name
        data = ("the recipe's sample data" if cfg.data.path == SAMPLE_DATA else
                f"data from {cfg.data.path}" if cfg.data.path else "the recipe's own data (its prepare() with no file)")
        print(f"run: SMOKE PROFILE: {model} and {data}, a few steps. "
              "It checks that the pipeline runs; it does not train a useful model. "
              f"For a real run on a GPU: make train RECIPE={recipe.name} PROFILE=full")


def print_summary(cfg: RunConfig, result: RunResult) -> None:
    print(f"done in {result.seconds:.0f} s: {result.output_dir}")
    if result.adapter_dir:
        print(f"  adapter: {result.adapter_dir}")
    if result.merged_dir:
        print(f"  merged:  {result.merged_dir}  (loads with transformers.AutoModelForCausalLM.from_pretrained)")
    if "gguf" in cfg.save.formats:
        verdict = "verified in llama.cpp" if result.gguf_verified else "FAILED verification: see verification.json"
        print(f"  gguf:    {result.output_dir / 'gguf'}  ({verdict})")
    print(f"  metrics: {result.output_dir / 'metrics.jsonl'}")
    if (result.output_dir / "eval.json").exists():
        print(f"  eval:    {result.output_dir / 'eval.json'}  (held-out scores before and after training)")
    print(f"  config:  {result.output_dir / 'run.yaml'}  (re-run: python -m kit train {cfg.recipe} --config "
          f"{result.output_dir / 'run.yaml'} --out NEW_DIR)")
    if (result.output_dir / "plots" / "run.png").exists():
        print(f"  plots:   {result.output_dir / 'plots'}")
    print(f"  report:  {result.output_dir / 'report.md'}")
    if result.merged_dir:
        system = f" --system {shlex.quote(cfg.data.system_prompt)}" if cfg.data.system_prompt else ""
        print(f"  chat:    python -m kit chat {result.merged_dir} --recipe {cfg.recipe}{system}")
