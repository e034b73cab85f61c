"""How a run's LLM judges are doing: failed judgements said in words, and the stop when they keep failing.

Each judge logs judge/<name>/failed (the share of a step's completions it could not score: no answer after
its retries, or a reply without a score), /unparsed (of those, the ones it answered without a score) and
/screened (completions that addressed the grader, scored 0 unasked), kit.rewards.judge. A failed judgement is
None, "does not apply", so a short outage costs that reward's signal for a few steps and nothing else; when more
than judge.max_failed of the judgements fail in each of judge.failing_steps logged steps in a row, the judge is
down rather than hiccuping, and the run stops after saving a checkpoint, to be resumed once it answers.
"""

from __future__ import annotations

from kit.config.judging import JudgeConfig

STOP_PREFIX = "judge_down:"  # a diagnostic whose code starts so stops the run (kit.monitor.health)


def judge_names(logs: dict) -> list[str]:
    return [key[len("judge/"):-len("/failed")] for key in logs if key.startswith("judge/") and key.endswith("/failed")]


def judge_checks(recent: list[dict], settings: JudgeConfig):
    """Failed and screened judgements over the latest logged steps, by judge."""
    if not recent:
        return
    for name in judge_names(recent[-1]):
        failed = [m[f"judge/{name}/failed"] for m in recent if f"judge/{name}/failed" in m]
        window = failed[-settings.failing_steps:]
        if len(window) == settings.failing_steps and min(window) > settings.max_failed:
            yield f"{STOP_PREFIX}{name}", (
                f"judge {name} failed {min(window):.0%} or more of its judgements in each of the last {len(window)} "
                f"steps (judge.max_failed {settings.max_failed:.0%}): its endpoint {settings.base_url} is down or "
                "answers without a score. The run stops after saving a checkpoint; bring the judge back and rerun "
                "with --resume (or raise judge.max_failed).")
        elif failed[-1] > 0:
            unparsed = recent[-1].get(f"judge/{name}/unparsed", 0.0)
            why = ("replies without a score: see the judge's replies with `kit rewards check`"
                   if unparsed >= failed[-1] else f"no answer from {settings.base_url}")
            yield f"judge_failed:{name}", (
                f"judge {name}: {failed[-1]:.0%} of this step's judgements failed ({why}); those completions get "
                f"None (does not apply) from it and keep their other rewards. The run stops if more than "
                f"{settings.max_failed:.0%} fail for {settings.failing_steps} steps in a row.")
        screened = recent[-1].get(f"judge/{name}/screened", 0.0)
        if screened > 0:
            yield f"judge_screened:{name}", (
                f"judge {name}: {screened:.0%} of this step's completions wrote to the grader (asked it to ignore the "
                "rubric, named their own score) and were scored 0 without asking it: the policy is probing the judge; "
                "see the samples.")
