"""Held-out evaluation during a run: before training, after each stage, and the before/after table.

The in-memory model is scored (the adapter starts at zero, so "before" is the base model). Each result
is written to OUT/eval.json as soon as it exists, so a resumed run keeps the evaluations made before it.
"""

from __future__ import annotations

import json

from kit import ranks
from kit.config import SHARDED, RunConfig
from kit.eval.evaluate import EvalResult, evaluate, format_table, write_json
from kit.eval.generate import Sampling, live_adapter_request
from kit.outputs import RunDir
from kit.recipe import Recipe
from kit.tools.budget import ToolBudget


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
    return [EvalResult(**r) for r in results if r["name"] in kept] or [None]


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
    print(f"eval: scoring {len(rows)} held-out prompts ({name} training)")
    sampling = Sampling(max_new_tokens=cfg.eval.max_new_tokens or cfg.grpo.max_completion_length, seed=cfg.seed,
                        chat_template_kwargs=cfg.grpo.chat_template_kwargs or {},
                        max_tool_rounds=cfg.grpo.max_tool_calling_iterations,
                        tool_budget=ToolBudget(cfg.grpo.tool_calls_per_turn, cfg.grpo.tool_seconds_per_rollout))
    return evaluate(model, tokenizer, recipe, rows, sampling, name, lora_request=live_adapter_request(model),
                    batch_size=cfg.eval.batch_size)


def report_evaluation(out: RunDir, evaluations: list) -> str | None:
    """The before/after table, OUT/eval.json, and the plots (reward curve + held-out scores, metrics)."""
    from kit.monitor.plots import plot_metrics, plot_run

    table = None
    if evaluations[0] is not None:
        table = format_table(evaluations)
        print(table)
        for earlier, later in zip(evaluations[1:], evaluations[2:]):
            change = 100 * (later.strict_accuracy - earlier.strict_accuracy)
            print(f"eval: held-out strict accuracy {later.name} vs {earlier.name}: {change:+.1f} points")
        write_json(out.eval, evaluations)
    for plot in (plot_run(out), plot_metrics(out)):
        if plot:
            print(f"plot: {plot}")
    return table
