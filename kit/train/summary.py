"""What a run says about itself: a banner before loading, and where everything went when it ends."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from kit.config import SAMPLE_DATA, SMOKE, TINY_PREFIX, RunConfig
from kit.config.formats import BY_NAME
from kit.config.stages import StagePlan, stage_plans
from kit.outputs import RunDir
from kit.recipe import Recipe


@dataclass
class RunResult:
    output_dir: Path
    written: dict[str, Path] = field(default_factory=dict)  # save format -> where it went
    failed: list[str] = field(default_factory=list)  # save formats that failed their checks
    seconds: float = 0.0

    @property
    def adapter_dir(self) -> Path | None:
        return self.written.get("lora")

    @property
    def merged_dir(self) -> Path | None:
        return self.written.get("merged_16bit")

    @property
    def gguf_verified(self) -> bool:
        return "gguf" not in self.failed


def stage_line(plan: StagePlan) -> str:
    """`format (grpo, 50 steps, rewards correctness_reward=0)`: a stage as the banner lists it."""
    steps = getattr(plan.cfg, plan.kind).max_steps
    details = [] if plan.name == plan.kind else [plan.kind]
    details.append(f"{steps} steps" if steps > 0 else "epochs")
    if plan.rewards:
        details.append("rewards " + " ".join(f"{name}={weight:g}" for name, weight in plan.rewards.items()))
    return f"{plan.name} ({', '.join(details)})"


def announce(cfg: RunConfig, recipe: Recipe, out: RunDir, sandbox: str | None = None) -> None:
    g = cfg.grpo
    prompts = cfg.completions_per_step // g.num_generations
    print(f"run: recipe {recipe.name}, model {cfg.model.name}, profile {cfg.profile}, output {out}")
    print(f"run: {prompts} prompt(s) x {g.num_generations} generations = {cfg.completions_per_step} "
          f"completions per step, max_steps {g.max_steps}")
    plans = stage_plans(cfg)
    if len(plans) > 1:
        print("run: stages: " + ", then ".join(stage_line(plan) for plan in plans))
    if cfg.profile == SMOKE:
        model = "a tiny model built on the spot" if cfg.model.name.startswith(TINY_PREFIX) else cfg.model.name
        data = ("the recipe's sample data" if cfg.data.path == SAMPLE_DATA else
                f"data from {cfg.data.path}" if cfg.data.path else "the recipe's own data (its prepare() with no file)")
        print(f"run: SMOKE PROFILE: {model} and {data}, a few steps. "
              "It checks that the pipeline runs; it does not train a useful model. "
              f"For a real run on a GPU: make train RECIPE={shlex.quote(cfg.recipe)} PROFILE=full"
              f"{' DATA=' + shlex.quote(cfg.data.path) if cfg.data.path not in (None, SAMPLE_DATA) else ''}")
    if sandbox:
        print(f"run: model code (code rewards, a Python tool) runs in the sandbox: {sandbox}")


def print_summary(cfg: RunConfig, result: RunResult) -> None:
    out = RunDir(result.output_dir)
    print(f"done in {result.seconds:.0f} s: {out}")
    for name, path in result.written.items():
        print(f"  {BY_NAME[name].label + ':':<8} {path}{format_note(name, result)}")
    print(f"  metrics: {out.metrics}")
    if out.eval.exists():
        print(f"  eval:    {out.eval}  (held-out scores before and after training)")
    print(f"  config:  {out.run_file}  "
          f"(re-run: python -m kit train --config {out.run_file})")
    if out.run_plot.exists():
        print(f"  plots:   {out.plots}")
    print(f"  report:  {out.report}")
    if result.merged_dir:
        system = f" --system {shlex.quote(cfg.data.system_prompt)}" if cfg.data.system_prompt else ""
        print(f"  chat:    python -m kit chat {result.merged_dir} --recipe {cfg.recipe}{system}")


def format_note(name: str, result: RunResult) -> str:
    fmt = BY_NAME[name]
    note = fmt.failed_note if name in result.failed else fmt.note
    if note and name == "merged_16bit" and result.merged_dir and sees_pictures(result.merged_dir):
        note = note.replace("AutoModelForCausalLM", "AutoModelForImageTextToText")
    return f"  ({note})" if note else ""


def sees_pictures(folder) -> bool:
    from kit.models.vision_models import is_vision_model

    return is_vision_model(str(folder))
