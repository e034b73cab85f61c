"""Held-out evaluation during a run: before training, after each stage, the before/after table, and the held-out
curve while GRPO trains.

The in-memory model is scored (the adapter starts at zero, so "before" is the base model). Each result
is written to OUT/eval.json as soon as it exists, so a resumed run keeps the evaluations made before it.
Every eval.every_steps GRPO steps, HeldOutCurve scores the first eval.during_n held-out rows the same way and
logs them to OUT/metrics.jsonl (eval/strict, eval/lenient, eval/format): the reward curve says what the policy
is paid for, this curve whether it got better at the task.

Every scoring leaves the model as training had it (training_state_kept): Unsloth's generate does not.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from transformers import TrainerCallback

from kit import env, ranks
from kit.config import SHARDED, RunConfig
from kit.eval.evaluate import PROPORTIONS, EvalResult, evaluate, format_table, gain_line, write_json
from kit.models.generate import Sampling, live_adapter_request
from kit.outputs import RunDir
from kit.recipe import Recipe
from kit.tools.budget import ToolBudget
from kit.train.training_state import training_state_kept


class HeldOutEvaluations:
    """The run's evaluations so far, in order; each new one is scored, kept and written."""

    def __init__(self, cfg: RunConfig, recipe: Recipe, model, tokenizer, rows, out: RunDir, trained_on: int = 0):
        self.cfg, self.recipe, self.model, self.tokenizer = cfg, recipe, model, tokenizer
        self.rows, self.out, self.trained_on = rows, out, trained_on
        self.results: list[EvalResult | None] = []

    def begin(self, stages_done: list[str] | None) -> None:
        """Score the model before training, or (resumed after `stages_done`) take the scores the interrupted run
        made before and after those stages."""
        self.results = [self.score("before")] if stages_done is None else earlier_evaluations(self.out, stages_done)
        self.save()  # kept for a resumed run's before/after table

    def after(self, stage: str) -> None:
        self.results.append(self.score("after" if len(self.cfg.stages) == 1 else f"after {stage}"))
        self.save()

    def score(self, name: str) -> EvalResult | None:
        result = evaluate_held_out(self.cfg, self.recipe, self.model, self.tokenizer, self.rows, name)
        if result is not None:
            result.trained_on = self.trained_on  # said in the table's header
        return result

    def save(self) -> None:
        if ranks.is_main() and self.results and self.results[0] is not None:
            write_json(self.out.eval, self.results)


def earlier_evaluations(out: RunDir, stages_done: list[str]) -> list:
    """The evaluations the interrupted run made before training and after the stages it finished (kept in
    eval.json as they were made); the stage it resumes in is scored again when it ends."""
    if not ranks.is_main():  # rank 0 alone evaluates and keeps the table
        return [None]
    results = json.loads(out.eval.read_text())["results"] if out.eval.exists() else []
    kept = {"before", *(f"after {name}" for name in stages_done)}
    return [EvalResult.from_json(r) for r in results if r["name"] in kept] or [None]


def evaluate_held_out(cfg: RunConfig, recipe: Recipe, model, tokenizer, rows, name: str):
    """Score the in-memory model on the held-out rows; with several processes, rank 0 scores them."""
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
    if not name.startswith("step "):  # the curve's checks say their own line
        print(f"eval: scoring {len(rows)} held-out prompts ({name} training)")
    sampling = Sampling(max_new_tokens=cfg.eval.max_new_tokens or cfg.grpo.max_completion_length, seed=cfg.seed,
                        chat_template_kwargs=cfg.grpo.chat_template_kwargs or {},
                        max_tool_rounds=cfg.grpo.max_tool_calling_iterations,
                        tool_budget=ToolBudget(cfg.grpo.tool_calls_per_turn, cfg.grpo.tool_seconds_per_rollout))
    with training_state_kept(model, tokenizer):
        return evaluate(model, tokenizer, recipe, rows, sampling, name, lora_request=live_adapter_request(model),
                        batch_size=cfg.eval.batch_size)


CHECK_EVERY_ON_A_GPU = 25


def check_every(cfg: RunConfig) -> int:
    """eval.every_steps as it applies here: null is 25 steps on a GPU (a check of 32 prompts costs about one
    step's generation), none on a CPU, where generation is the slow part of a step."""
    if cfg.launch.several_processes and cfg.launch.launcher in SHARDED:
        return 0  # no process holds the whole model (as for before/after: evaluate_held_out)
    if cfg.eval.every_steps is not None:
        return cfg.eval.every_steps
    return CHECK_EVERY_ON_A_GPU if env.has_gpu() else 0


class HeldOutCurve(TrainerCallback):
    """Every `every` GRPO steps: the first eval.during_n held-out rows scored as before/after are, logged to
    metrics.jsonl and said in one line."""

    def __init__(self, held_out: HeldOutEvaluations, stage: str, every: int, metrics_path):
        self.held_out, self.stage, self.every, self.metrics_path = held_out, stage, every, metrics_path
        rows = held_out.rows
        self.rows = rows.select(range(min(held_out.cfg.eval.during_n, len(rows))))
        self.step_seconds, self.last_step_end = [], None
        self.checks: list[tuple[int, float]] = []  # (step, held-out strict), read by kit.monitor.gaming

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            print(f"eval: held-out check while training: {len(self.rows)} prompts every {self.every} steps "
                  f"(eval.during_n, eval.every_steps), logged as eval/strict in {Path(self.metrics_path).name}")

    def on_step_begin(self, args, state, control, **kwargs):
        if self.last_step_end is None:
            self.last_step_end = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        now = time.perf_counter()
        self.step_seconds.append(now - self.last_step_end)
        # not when a stop was asked for before the planned end: the checkpoint comes first (every rank sees the flag)
        stopping_early = control.should_training_stop and state.global_step < state.max_steps
        if state.global_step % self.every == 0 and not stopping_early:
            self.check(state.global_step, state.is_world_process_zero)
        self.last_step_end = time.perf_counter()  # the check's own time is not a step's

    def check(self, step: int, main: bool) -> None:
        import torch

        held = self.held_out
        started = time.perf_counter()
        with torch.random.fork_rng():  # generation seeds torch; the training that follows keeps its own draws
            result = evaluate_held_out(held.cfg, held.recipe, held.model, held.tokenizer, self.rows, f"step {step}")
        seconds = time.perf_counter() - started
        if result is None or not main:
            return
        self.checks.append((step, result.strict_accuracy))
        record = {"stage": self.stage, "step": step, "eval/strict": result.strict_accuracy,
                  "eval/lenient": result.lenient_accuracy, "eval/format": result.format_compliance,
                  "eval/n": result.n, "eval/seconds": round(seconds, 2)}
        with open(self.metrics_path, "a") as f:
            f.write(json.dumps(record) + "\n")
        shown = f", format {result.format_compliance:.1%}" if result.format_compliance is not None else ""
        print(f"eval (step {step}): held-out strict {result.strict_accuracy:.1%}, lenient "
              f"{result.lenient_accuracy:.1%}{shown} on {result.n} prompts; {seconds:.1f} s"
              + (self.share(seconds) if step == self.every else ""))

    def share(self, seconds: float) -> str:
        """After the first check: what the checks cost, as a share of the run at this pace."""
        steps = self.step_seconds[-self.every:]
        training = sum(steps) / len(steps) * self.every
        return f" (the checks take about {seconds / (seconds + training):.0%} of the run at this pace)"


def report_evaluation(out: RunDir, evaluations: list) -> str | None:
    """The before/after table (95% intervals, the gains' paired tests), OUT/eval.json, and the plots (reward curve +
    held-out scores with their intervals, metrics)."""
    from kit.monitor.plots import plot_metrics, plot_run

    table = None
    if evaluations[0] is not None:
        table = format_table(evaluations)
        print(table)
        for earlier, later in zip(evaluations[1:], evaluations[2:]):  # stage by stage; the table has each vs before
            print(f"eval: held-out {gain_line(earlier, later, PROPORTIONS[0])}")
        write_json(out.eval, evaluations)
    for plot in (plot_run(out), plot_metrics(out)):
        if plot:
            print(f"plot: {plot}")
    return table
