"""The training run, as a list of named steps: check, claim the folder, load, train each stage, save, report.

    python -m kit train gsm8k --out outputs/gsm8k-run grpo.max_steps=100

What it writes is listed in kit/outputs.py. With more than one process (kit.train.launch), every rank runs this
module and rank 0 alone writes the files; inside checkpoints the trainer keeps one RNG state per rank.
"""

from __future__ import annotations

import time

from kit import cpu_threads, ranks
from kit.config import SHARDED, RunConfig
from kit.data import drop_long_prompts
from kit.export.save import SaveJob, save_formats
from kit.models import loader  # Unsloth's import comes first: kit.models.import_unsloth_first
from kit.monitor import finish_time
from kit.monitor.report import write_report
from kit.outputs import write_run_section
from kit.recipe import Recipe
from kit.train.evaluation import HeldOutEvaluations, report_evaluation
from kit.train.prepare import PreparedRun, claimed_run
from kit.train.record import record_adaptive_weights, write_run_file
from kit.train.resume import continue_from, stop_on_request
from kit.train.stages import STAGES, StageInputs
from kit.train.stages.grpo import gather_sharded_adapter
from kit.train.summary import RunResult, announce, print_summary


def run_training(cfg: RunConfig, recipe: Recipe, resume: bool = False, plan=None) -> RunResult:
    """Check, then train while holding OUT: no second run can write there meanwhile (kit.train.run_lock)."""
    with claimed_run(cfg, recipe, resume) as (run, checkpoint):
        return train_and_save(cfg, recipe, run, checkpoint, plan)


def train_and_save(cfg: RunConfig, recipe: Recipe, run: PreparedRun, checkpoint, plan) -> RunResult:
    """Load, score the base, train each stage (scoring after it), save the formats asked for, report."""
    out, resumed = run.out, checkpoint is not None
    announce(cfg, recipe, out, run.sandbox)
    cpu_threads.start(cfg.cpu_threads, say=print if ranks.is_main() else lambda line: None)
    model, tokenizer = loader.load_model(cfg.model, cfg.seed, sharded=cfg.launch.launcher in SHARDED)
    tools = prepare_tools(cfg, recipe, tokenizer)
    dataset = drop_long_prompts(run.rows, tokenizer, cfg.data.max_prompt_length, tools)
    first = first_stage(run, checkpoint)  # a checkpoint holds everything trained before it
    start_output(cfg, recipe, run, checkpoint, first)  # after the checks that need the model: a refusal writes nothing
    timings = {"load": seconds_since_start()}
    held_out = HeldOutEvaluations(cfg, recipe, model, tokenizer, run.held_out, out, run.trained_on)
    clock = finish_time.start(run_clock(run, first, resumed))
    with clock.evaluation(scores=not resumed):
        held_out.begin([stage.name for stage in run.stages[:first]] if resumed else None)
    for stage in run.stages[first:]:
        inputs = StageInputs(stage.cfg, recipe, run.stage_rewards.get(stage.name, run.rewards), out, dataset, model,
                             tokenizer, checkpoint if stage is run.stages[first] else None, plan, stage, held_out)
        started = time.perf_counter()
        clock.stage_begins(stage.name)
        with stop_on_request(out, model, cfg.recipe, inputs.checkpoints) as stopper:
            trainer = STAGES[stage.kind].train(inputs, run.stage_args[stage.name], stopper)
        clock.stage_ends()
        timings[f"{stage.name} training"] = time.perf_counter() - started
        with clock.evaluation():
            held_out.after(stage.name)
    if ranks.is_main():
        write_run_section(out.run_file, "cpu", cpu_threads.record(cfg.cpu_threads))
        record_adaptive_weights(out, run.rewards)
    adapter_saved = gather_sharded_adapter(cfg, trainer, out)
    if not ranks.is_main():  # rank 0 holds the whole trained model; it merges and reports alone
        return RunResult(out.root, seconds=seconds_since_start())
    table = report_evaluation(out, held_out.results)
    started = time.perf_counter()
    job = SaveJob(model=model, tokenizer=tokenizer, out=out, settings=cfg.save,
                  base_model=loader.resolve_model_name(cfg.model.name), full_finetuning=cfg.model.full_finetuning,
                  adapter_saved=adapter_saved)
    saved = save_formats(job, cfg.save.formats)
    timings["save and export"] = time.perf_counter() - started
    timings["whole run"] = seconds_since_start()
    write_run_section(out.run_file, "timing", clock.record(timings["whole run"], timings["save and export"]))
    write_report(out, timings, table)
    result = RunResult(out.root, saved.written, saved.failed, seconds_since_start())
    print_summary(cfg, result)
    return result


def run_clock(run: PreparedRun, first: int, resumed: bool) -> finish_time.RunClock:
    """The stages left to train with their planned steps, and the held-out evaluations left (none without rows)."""
    stages = [(s.name, getattr(s.cfg, s.kind).max_steps) for s in run.stages[first:]]
    evaluations = 0 if run.held_out is None else len(stages) + (0 if resumed else 1)
    return finish_time.RunClock(stages, evaluations, elapsed=seconds_since_start())


def prepare_tools(cfg: RunConfig, recipe: Recipe, tokenizer) -> list:
    """With a recipe's tools: a chat template that shows them (said when the kit supplies it); their functions."""
    if not recipe.toolbox:
        return []
    from kit.tools.template import use_tool_template

    note = use_tool_template(tokenizer, cfg.model.name)
    if note and ranks.is_main():
        print(note)
    return recipe.toolbox.functions()


def first_stage(run: PreparedRun, checkpoint) -> int:
    """Where the run starts in its list of stages: at the start, or at the GRPO stage the checkpoint belongs to."""
    if checkpoint is None:
        return 0
    folders = [run.out.stage_checkpoints(s.checkpoint_folder) if s.kind == "grpo" else None for s in run.stages]
    return folders.index(checkpoint.parent)


def start_output(cfg: RunConfig, recipe: Recipe, run: PreparedRun, checkpoint, first: int) -> None:
    """A new run records its config in OUT/run.yaml; a resumed one keeps it and says where it continues."""
    if checkpoint is not None:
        continue_from(run.out, checkpoint, run.stages[first].name, tuple(s.name for s in run.stages[first + 1:]))
    if ranks.is_main():
        run.out.root.mkdir(parents=True, exist_ok=True)
        if checkpoint is None:
            write_run_file(run.out, cfg, recipe.rewards)
            if run.held_out_record:
                run.held_out_record.write(run.out.held_out)
        write_run_section(run.out.run_file, "cpu", cpu_threads.record(cfg.cpu_threads))


def seconds_since_start() -> float:
    """Wall time of this process so far: imports and model building count, as the user waited for them."""
    import psutil

    return time.time() - psutil.Process().create_time()
