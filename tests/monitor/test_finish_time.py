"""The run's clock on a fake clock: when the estimate is said, what it adds up, what the step line and run.yaml
get."""

import pytest

from kit.monitor.finish_time import RunClock, duration


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def stage_steps(run: RunClock, fake: FakeClock, seconds: list[float], max_steps: int, start: int = 1):
    """Each step takes its seconds; the lines said, by step."""
    lines = {}
    for step, took in enumerate(seconds, start):
        fake.now += took
        line = run.step_ended(step, max_steps)
        if line:
            lines[step] = line
    return lines


def test_the_estimate_comes_after_three_steps_past_the_warm_up():
    fake = FakeClock()
    run = RunClock([("grpo", 10)], evaluations=2, elapsed=30.0, clock=fake)
    with run.evaluation():
        fake.now += 4.0
    run.stage_begins("grpo")
    fake.now += 5.0  # the trainer built
    lines = stage_steps(run, fake, [20.0, 2.0, 2.0, 2.0, 2.0], 10)
    assert list(lines) == [4]  # the warm-up step and three timed ones; said once
    stage = run.stages[0]
    assert stage.pace() == 2.0  # the 20 s warm-up is not the pace
    assert stage.estimate == 5 + 20 + 6 + 6 * 2.0  # taken so far, then 6 steps left at 2 s
    # the whole run: 30 s before the clock, the 4 s evaluation, the stage, one evaluation still to come
    assert run.whole[0] == 30 + 4 + stage.estimate + 4.0
    assert lines[4].startswith("time: grpo ~43 s (10 steps at 2 s/step); whole run ~81 s (")
    assert "1 held-out evaluation left at 4 s each" in lines[4] and "save and export not included" in lines[4]


def test_a_later_stage_not_started_is_said_not_guessed():
    fake = FakeClock()
    run = RunClock([("sft", 8), ("grpo", 50)], clock=fake)
    run.stage_begins("sft")
    lines = stage_steps(run, fake, [3.0, 1.0, 1.0, 1.0], 8)
    assert "whole run at least ~" in lines[4] and "grpo (50 steps) not yet measured" in lines[4]
    assert run.left(4) == "~4 s left in sft"  # not the run's: grpo has no pace yet
    run.stage_ends()
    run.stage_begins("grpo")
    lines = stage_steps(run, fake, [3.0, 2.0, 2.0, 2.0], 50)
    assert "at least" not in lines[4] and "not yet measured" not in lines[4]
    assert run.left(4) == "~1.5 min left"


def test_nothing_to_say_before_the_pace_is_known():
    fake = FakeClock()
    run = RunClock([("grpo", 40)], clock=fake)
    run.stage_begins("grpo")
    assert stage_steps(run, fake, [9.0, 1.0, 1.0], 40) == {}
    assert run.left(3) is None


def test_a_short_stage_estimates_from_fewer_steps_and_a_two_step_one_not_at_all():
    fake = FakeClock()
    run = RunClock([("a", 3), ("b", 2)], clock=fake)
    run.stage_begins("a")
    assert list(stage_steps(run, fake, [5.0, 1.0, 1.0], 3)) == [2]
    run.stage_ends()
    run.stage_begins("b")
    assert stage_steps(run, fake, [5.0, 1.0], 2) == {}


def test_a_resumed_stage_warms_up_on_its_first_step_here():
    fake = FakeClock()
    run = RunClock([("grpo", 20)], clock=fake)
    run.stage_begins("grpo")
    lines = stage_steps(run, fake, [30.0, 2.0, 2.0, 2.0], 20, start=11)
    assert list(lines) == [14] and run.stages[0].pace() == 2.0


def test_the_record_sets_each_estimate_against_what_it_took():
    fake = FakeClock()
    run = RunClock([("grpo", 6)], evaluations=2, elapsed=10.0, clock=fake)
    run.stage_begins("grpo")
    stage_steps(run, fake, [4.0, 1.0, 1.0, 1.0, 3.0, 3.0], 6)
    run.stage_ends()
    with run.evaluation():
        fake.now += 2.5
    record = run.record(whole_actual=40.0, save_seconds=3.0)
    assert record["stages"]["grpo"] == {"planned_steps": 6, "step_seconds": 1.8, "estimated_seconds": 9.0,
                                        "estimated_at_step": 4, "actual_seconds": 13.0}
    assert record["held_out_evaluations_seconds"] == [2.5]
    whole = record["whole_run"]
    assert whole["estimated_seconds"] == 19.0 and whole["estimated_at"] == "grpo step 4"
    assert "2 held-out evaluations not yet measured" in whole["not_included"]
    assert whole["actual_seconds"] == 40.0 and whole["save_and_export_seconds"] == 3.0


def test_a_resumed_runs_before_evaluation_scores_nothing_and_is_not_timed():
    fake = FakeClock()
    run = RunClock([("grpo", 6)], evaluations=1, clock=fake)
    with run.evaluation(scores=False):
        fake.now += 0.1
    assert run.evaluation_seconds == []


@pytest.mark.parametrize("seconds, said", [(42.4, "42 s"), (150, "2.5 min"), (7200, "2.0 h")])
def test_durations_read_in_the_unit_that_fits(seconds, said):
    assert duration(seconds) == said
