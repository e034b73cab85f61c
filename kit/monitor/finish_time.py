"""How long a run will take: said once each stage has a few steps measured, then set against what it took.

    time: grpo ~1.2 min (40 steps at 1.6 s/step); whole run ~2.0 min (load 31 s, 2 held-out evaluations
          at 4.1 s each; save and export not included)
    grpo step 12/40  reward 0.412 ±0.301  ...  1.6 s/step  ~45 s left

The first step of a stage compiles and warms up: its time is not a step's pace. A step's time is the wall time from
one step's end to the next, so what runs between steps (logging, samples, checkpoints, held-out checks) counts.
A stage not started yet has no pace: the whole run's estimate says so rather than guess. kit.train.run starts one
RunClock per run (`active()` finds it from the trainer's callbacks, kit.monitor.pace) and records estimate against
actual in OUT/run.yaml's `timing` section.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

WARM_UP_STEPS = 1  # the first step compiles and warms up: not counted in the pace
MEASURED_STEPS = 3  # steps timed after the warm-up before the estimate is said


@dataclass
class StageTime:
    name: str
    planned_steps: int
    begun: float | None = None  # the clock when the stage began (its trainer built inside it)
    last_end: float | None = None  # the clock at the last step's end
    steps_seen: int = 0
    step_seconds: list[float] = field(default_factory=list)  # the steps after the warm-up
    estimate: float | None = None
    estimated_at: int | None = None  # the step the estimate was made at
    actual: float | None = None

    def pace(self) -> float | None:
        return sum(self.step_seconds) / len(self.step_seconds) if self.step_seconds else None

    def left(self, step: int) -> float | None:
        pace = self.pace()
        return None if pace is None else pace * max(self.planned_steps - step, 0)

    def ready(self, step: int) -> bool:
        """Enough steps timed to say the estimate: MEASURED_STEPS after the warm-up, fewer in a short stage (at
        least one, with a step still to come)."""
        wanted = min(MEASURED_STEPS, self.planned_steps - WARM_UP_STEPS - 1)
        return wanted >= 1 and len(self.step_seconds) >= wanted and step < self.planned_steps


class RunClock:
    """The run's stages in order, each one's pace once measured, and the held-out evaluations' time.

    `elapsed` is the time the run had taken when the clock started (the process's start to now: imports, load)."""

    def __init__(self, stages: list[tuple[str, int]], evaluations: int = 0, elapsed: float = 0.0,
                 clock=time.perf_counter):
        self.clock = clock
        self.started = clock() - elapsed  # the run's start on this clock
        self.stages = [StageTime(name, steps) for name, steps in stages]
        self.evaluations_planned = evaluations  # held-out evaluations still to run when the clock starts
        self.evaluation_seconds: list[float] = []
        self.current: StageTime | None = None
        self.whole: tuple[float, str, list[str]] | None = None  # the latest whole-run estimate: seconds, when, gaps

    def stage_begins(self, name: str) -> None:
        self.current = next(s for s in self.stages if s.name == name)
        self.current.begun = self.current.last_end = self.clock()

    def stage_ends(self) -> None:
        if self.current is not None:
            self.current.actual = self.clock() - self.current.begun
            self.current = None

    @contextmanager
    def evaluation(self, scores: bool = True):
        """Times a held-out evaluation; `scores` False for one that scores nothing (a resumed run's "before")."""
        started = self.clock()
        yield
        if scores and len(self.evaluation_seconds) < self.evaluations_planned:
            self.evaluation_seconds.append(self.clock() - started)

    def step_ended(self, step: int, max_steps: int) -> str | None:
        """Time the step; the estimate line when this step makes the stage's estimate ready."""
        stage = self.current
        if stage is None:
            return None
        now, stage.planned_steps = self.clock(), max_steps or stage.planned_steps
        stage.steps_seen += 1
        if stage.steps_seen > WARM_UP_STEPS:  # a resumed stage's first step here warms up all the same
            stage.step_seconds.append(now - stage.last_end)
        stage.last_end = now
        if stage.estimate is not None or not stage.ready(step):
            return None
        stage.estimate, stage.estimated_at = now - stage.begun + stage.left(step), step
        return self.estimate_line(stage, step)

    def estimate_line(self, stage: StageTime, step: int) -> str:
        seconds, gaps = self.whole_estimate(stage, step)
        self.whole = (seconds, f"{stage.name} step {step}", gaps)
        at_least = "at least " if any(gap.endswith("not yet measured") for gap in gaps) else ""
        return (f"time: {stage.name} ~{duration(stage.estimate)} ({stage.planned_steps} steps at "
                f"{stage.pace():.2g} s/step); whole run {at_least}~{duration(seconds)} ({'; '.join(gaps)})")

    def whole_estimate(self, stage: StageTime, step: int) -> tuple[float, list[str]]:
        """The run's time: what it took so far, what is left of this stage and of the evaluations; what the
        estimate cannot include, said."""
        seconds = self.clock() - self.started + stage.left(step)
        notes = []
        later = self.stages[self.stages.index(stage) + 1:]
        notes += [f"{s.name} ({s.planned_steps} steps) not yet measured" for s in later]
        evaluations_left = self.evaluations_planned - len(self.evaluation_seconds)
        if evaluations_left > 0 and self.evaluation_seconds:
            each = sum(self.evaluation_seconds) / len(self.evaluation_seconds)
            seconds += each * evaluations_left
            notes.append(f"{_evaluations(evaluations_left)} left at {duration(each)} each")
        elif evaluations_left > 0:
            notes.append(f"{_evaluations(evaluations_left)} not yet measured")
        notes.append("save and export not included")
        return seconds, notes

    def left(self, step: int) -> str | None:
        """For the step line: '~3 min left' (the whole run's, when every stage has a pace), else the stage's."""
        stage = self.current
        if stage is None or stage.estimate is None:
            return None
        seconds = stage.left(step)
        later = self.stages[self.stages.index(stage) + 1:]
        if not later:
            return f"~{duration(seconds)} left"
        return f"~{duration(seconds)} left in {stage.name}"

    def record(self, whole_actual: float, save_seconds: float | None = None) -> dict:
        """run.yaml's `timing`: each stage's estimate (and the step it was made at) against what it took."""
        stages = {s.name: {"planned_steps": s.planned_steps, "step_seconds": _round(s.pace()),
                           "estimated_seconds": _round(s.estimate), "estimated_at_step": s.estimated_at,
                           "actual_seconds": _round(s.actual)} for s in self.stages}
        seconds, when, gaps = self.whole or (None, None, [])
        whole = {"estimated_seconds": _round(seconds), "estimated_at": when, "not_included": gaps,
                 "actual_seconds": _round(whole_actual)}
        if save_seconds is not None:
            whole["save_and_export_seconds"] = _round(save_seconds)
        return {"stages": stages, "held_out_evaluations_seconds": [_round(s) for s in self.evaluation_seconds],
                "whole_run": whole}


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _evaluations(count: int) -> str:
    return f"{count} held-out evaluation{'s' if count > 1 else ''}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


_active: RunClock | None = None


def start(clock: RunClock | None) -> RunClock | None:
    """The run's clock, found by the trainer's callbacks (a trainer outside a kit run has none: nothing said)."""
    global _active
    _active = clock
    return clock


def active() -> RunClock | None:
    return _active
