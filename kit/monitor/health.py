"""Training you can watch: the guide's warning signs, checked every logged step and said in plain words.

    HealthMonitor(beta=0.0).observe(step, logs) -> the diagnostics that start at this step

Each diagnostic is printed once when it starts (again only if it clears and comes back), with the
numbers that triggered it and what to change, and recorded in OUT/diagnostics.jsonl. A NaN or inf
loss or gradient norm stops the run after saving a checkpoint. The samples a run keeps beside these:
kit/monitor/samples.py.
"""

from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

from transformers import TrainerCallback

from kit.config.judging import JudgeConfig
from kit.monitor.easy_reward import easy_reward_checks
from kit.monitor.judge_health import STOP_PREFIX, judge_checks
from kit.monitor.tool_health import tool_checks


@dataclass
class Diagnostic:
    code: str
    step: int
    message: str


class HealthMonitor:
    """Pure logic: feed it TRL's logged metrics step by step; it says what started going wrong."""

    def __init__(self, beta: float = 0.0, window: int = 20, ranges: dict[str, tuple] | None = None,
                 tools: bool = False, weights: dict[str, float] | None = None, judge: JudgeConfig | None = None):
        self.beta = beta
        self.judge = judge or JudgeConfig()  # when a judge's failures stop the run
        self.tools = tools  # the recipe has tools: watch how the model uses them (tools/* from ToolStats)
        self.window = window
        self.ranges = ranges or {}  # reward name -> its documented (low, high); [0, 1] when not known
        self.weights = weights or {}  # reward name -> its weight; a negative one makes it a penalty (1 when not known)
        self.history: deque[dict] = deque(maxlen=window)
        self.active: set[str] = set()
        self.noted_beta = False
        self.loss_scaling = False  # fp16 mixed precision (HealthCallback sets it from the trainer's args)

    def observe(self, step: int, logs: dict, more=()) -> list[Diagnostic]:
        """`more`: (code, message) pairs found elsewhere this step (kit.monitor.gaming), said the same way."""
        if "reward" not in logs and "loss" not in logs:
            return []
        self.history.append(logs)
        found = dict(self.checks(logs)) | dict(more)
        started = [Diagnostic(code, step, message) for code, message in found.items() if code not in self.active]
        self.active = (self.active & {"beta_zero"}) | set(found)
        if not self.noted_beta and self.beta == 0 and "loss" in logs:
            self.noted_beta = True
            self.active.add("beta_zero")
            started.insert(0, Diagnostic("beta_zero", step, "note: beta = 0 (TRL's default): no reference model and "
                                         "no KL term, so the loss sits near 0 by design. Watch reward and reward_std."))
        return started

    def checks(self, logs: dict):
        recent = list(self.history)
        last = recent[-5:]
        loss, grad = logs.get("loss"), logs.get("grad_norm")
        # with fp16 loss scaling an overflowing gradient is a skipped step: FiniteGuard counts those and stops
        for name, value in (("loss", loss), ("grad_norm", None if self.loss_scaling else grad)):
            if isinstance(value, (int, float)) and not math.isfinite(value):
                yield "not_finite", (f"{name} is {value}: training diverged. The run stops after saving a checkpoint; "
                                     "lower the learning rate or max_grad_norm and resume from an earlier checkpoint.")
        if len(last) == 5 and all("reward_std" in m for m in last):
            std = _mean(m["reward_std"] for m in last)
            zero = _mean(m.get("frac_reward_zero_std", 0.0) for m in last)
            if std < 0.05 or zero > 0.8:
                yield "no_signal", (f"no learning signal: reward_std {std:.3f}, {zero:.0%} of prompts with identical "
                                    "rewards over the last 5 steps. GRPO learns from differences within a group: raise "
                                    "num_generations, give partial credit, or start from a warm start "
                                    "(stages: [sft, grpo]).")
        kl = logs.get("kl")
        if self.beta > 0 and isinstance(kl, (int, float)) and kl > 0.5:
            yield "kl_high", f"KL {kl:.2f} > 0.5: the policy is drifting from the reference; lower the learning rate."
        if len(recent) == self.window and all("reward" in m for m in recent):
            half = self.window // 2
            early, late = _mean(m["reward"] for m in recent[:half]), _mean(m["reward"] for m in recent[half:])
            spread = max(m["reward"] for m in recent) - min(m["reward"] for m in recent)
            if abs(late - early) < 0.01 and spread < 0.05:
                yield "reward_flat", (f"reward flat over {self.window} steps ({early:.3f} -> {late:.3f}): "
                                      "check the samples; try a higher learning rate or softer rewards.")
        if len(last) >= 3 and all(m.get("completions/clipped_ratio", 0.0) > 0.9 for m in last[-3:]):
            ratio = last[-1]["completions/clipped_ratio"]
            yield "clipped", (f"{ratio:.0%} of completions hit max_completion_length: they are cut off before they "
                              "finish; raise grpo.max_completion_length.")
        for name, fraction in _not_finite_rewards(logs):
            yield f"not_finite:{name}", (f"reward {name} returned NaN or inf for {fraction:.0%} of completions: TRL "
                                         "counts those as 'does not apply', so they teach nothing. Fix the reward: "
                                         "return a number, or None where it does not apply.")
        if self.tools:
            yield from tool_checks(recent)
        yield from judge_checks(recent, self.judge)
        yield from easy_reward_checks(recent, self.window, self.weights, self.ranges)
        for name in _reward_names(logs):
            means = [m.get(f"rewards/{name}/mean") for m in last]
            stds = [m.get(f"rewards/{name}/std") for m in last]
            if len(last) == 5 and None not in means and None not in stds and max(stds) < 1e-6:
                weight = self.weights.get(name, 1.0)
                level = _extreme(means[-1], *self.ranges.get(name, (0.0, 1.0)), weight)
                if level:
                    named = f"{name} (weight {weight:g})" if weight < 0 else name  # a penalty: which end is which
                    yield f"stuck:{name}", (f"reward {named} stuck at its {level} ({means[-1]:g}) for 5 steps: it "
                                            "gives no signal; soften it, reweight it, or drop it.")


def _extreme(value: float, low: float | None, high: float | None, weight: float = 1.0) -> str | None:
    """'minimum' or 'maximum' when a reward sits at an end of its range. A penalty at the end that adds the most
    to the total, when that is 0 or less, is a penalty nothing has earned: no warning. That end is the maximum of
    a range up to 0 (DAPO's overlong punishment), or the minimum of a 0..1 reward given a negative weight."""
    low, high = 0.0 if low is None else low, 1.0 if high is None else high
    level = "minimum" if value <= low else "maximum" if value >= high else None
    best, best_pay = ("maximum", weight * high) if weight >= 0 else ("minimum", weight * low)
    return None if level == best and best_pay <= 0 else level


def say(line: str) -> None:
    """A line of its own above the trainer's progress bar, not glued onto the bar's line."""
    from tqdm.auto import tqdm

    tqdm.write(line)


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def _reward_names(logs: dict) -> list[str]:
    return [key[len("rewards/"):-len("/mean")] for key in logs if key.startswith("rewards/") and key.endswith("/mean")]


def _not_finite_rewards(logs: dict) -> list[tuple[str, float]]:
    """rewards/<name>/not_finite, logged by kit.rewards.guard only for a batch where a reward gave NaN or inf."""
    return [(key[len("rewards/"):-len("/not_finite")], value) for key, value in logs.items()
            if key.startswith("rewards/") and key.endswith("/not_finite") and value]


class HealthCallback(TrainerCallback):
    def __init__(self, monitor: HealthMonitor, path: Path):
        self.monitor, self.path = monitor, Path(path)
        self.stopper = None  # the stage's GracefulStop (kit.train.resume): a stop then ends as an interrupted run
        self.gaming = None  # kit.monitor.gaming.GamingWatch: rank 0 looks for signs of a gamed reward too

    def on_log(self, args, state, control, logs=None, **kwargs):
        # Every rank judges the same logs (the trainer averages them over ranks), so all stop together;
        # rank 0 alone says it and writes it.
        if not logs:
            return
        self.monitor.loss_scaling = bool(getattr(args, "fp16", False))
        more = self.gaming.check(state.global_step, logs) if self.gaming and state.is_world_process_zero else ()
        for diagnostic in self.monitor.observe(state.global_step, logs, more):
            if state.is_world_process_zero:
                say(f"health (step {diagnostic.step}): {diagnostic.message}")
                with self.path.open("a") as f:
                    f.write(json.dumps(asdict(diagnostic)) + "\n")
            if stops_the_run(diagnostic.code):
                control.should_save = True
                control.should_training_stop = True
                if self.stopper is not None:  # not finished: no merge; the run says how to resume
                    self.stopper.requested = True


def stops_the_run(code: str) -> bool:
    """Diverged training, or a judge that stays down: save a checkpoint and stop."""
    return code == "not_finite" or code.startswith(STOP_PREFIX)
