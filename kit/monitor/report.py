"""OUT/report.md: one page that says what the run did, what it saw, and how it ended.

Config and versions (run.yaml), timings, the health diagnostics raised, the plots, sample completions
from early and late in training, the held-out table when there is one, and what each process did
when there were several (distributed.json).
"""

from __future__ import annotations

import json
from pathlib import Path

from kit.outputs import RunDir
from kit.tools.stats import transcript_text


def write_report(out: RunDir | Path, timings: dict[str, float], eval_table: str | None) -> Path:
    out = RunDir(out)
    sections = [f"# Run report: {out.root.name}", "", "## Timings", ""]
    sections += [f"- {name}: {seconds:.1f} s" for name, seconds in timings.items()]
    sections += ["", "## Held-out evaluation", "", f"```\n{eval_table}\n```" if eval_table else
                 f"not run: {eval_not_run_reason(out)}"]
    sections += held_out_curve_lines(out)
    sections += process_lines(out)
    sections += ["", "## Health diagnostics", ""] + diagnostics_lines(out)
    sections += ["", "## Plots", ""] + [f"![{p.stem}]({p.relative_to(out.root)})"
                                        for p in sorted(out.plots.glob("*.png"))]
    sections += ["", "## Sample completions", ""] + sample_lines(out)
    sections += ["", f"## Config and versions ({out.run_file.name})", "", "```yaml", out.run_file.read_text().rstrip(),
                 "```", ""]
    out.report.write_text("\n".join(sections))
    return out.report


def held_out_curve_lines(out: RunDir) -> list[str]:
    """The held-out checks made while GRPO trained (eval.every_steps), as a table; none without them."""
    from kit.monitor.metrics import held_out_checks, read_metrics

    checks = held_out_checks(read_metrics(out.metrics)) if out.metrics.exists() else []
    if not checks:
        return []
    lines = ["", f"## Held-out while training ({checks[0]['eval/n']} prompts, greedy)", "",
             "| stage | step | strict | lenient | format |", "|---|---:|---:|---:|---:|"]
    for check in checks:
        scores = [percent_or_dash(check.get(f"eval/{key}"), check["eval/n"]) for key in ("strict", "lenient", "format")]
        lines.append(f"| {check.get('stage', '')} | {check['step']} | {' | '.join(scores)} |")
    return lines


def percent_or_dash(value: float | None, n: int) -> str:
    """A proportion of n prompts with its 95% interval, e.g. "45.0% [36, 55]"."""
    from kit.eval.evaluate import interval_text

    return "-" if value is None else f"{100 * value:.1f}% {interval_text(n, value)}"


def eval_not_run_reason(out: RunDir) -> str:
    """The reason from the run's own settings (run.yaml), as the run printed it when it began."""
    import yaml

    from kit.config import SHARDED
    from kit.data import eval_skip_reason

    run = yaml.safe_load(out.run_file.read_text())
    data, evaluation, launch = run.get("data", {}), run.get("eval", {}), run.get("launch", {})
    reason = eval_skip_reason(data.get("path"), evaluation.get("n", 0), evaluation.get("path"),
                              evaluation.get("holdout", 0.0))
    if reason:
        return reason
    if launch.get("num_processes", 1) * (launch.get("num_machines") or 1) > 1 and launch.get("launcher") in SHARDED:
        return (f"with launch.launcher={launch['launcher']} no single process holds the whole model; "
                "score OUT/merged with python -m kit eval")
    return "no held-out rows were scored"


def process_lines(out: RunDir) -> list[str]:
    """A multi-process run's OUT/distributed.json as a table: one row per process."""
    path = out.distributed
    if not path.exists():
        return []
    run = json.loads(path.read_text())
    lines = ["", "## Processes", "", f"{run['num_processes']} processes, launcher {run['launcher']}, "
             f"backend {run['backend']}", "", "| rank | device | steps | completions per step | trainable norm "
             "before -> after |", "| --- | --- | ---: | --- | --- |"]
    for r in run["ranks"]:
        per_step = sorted(set(r["completions_per_step"]))
        norms = "n/a (sharded)" if r["trainable_norm_start"] is None else \
            f"{r['trainable_norm_start']:.6g} -> {r['trainable_norm_end']:.6g}"
        lines.append(f"| {r['rank']} | {r['device']} | {r['optimizer_steps']} | "
                     f"{', '.join(map(str, per_step))} | {norms} |")
    return lines


def diagnostics_lines(out: RunDir) -> list[str]:
    path = out.diagnostics
    if not path.exists():
        return ["none raised"]
    steps_of: dict[str, list[int]] = {}  # one line per message, however often it came back
    for d in map(json.loads, path.read_text().splitlines()):
        steps_of.setdefault(d["message"], []).append(d["step"])
    return [f"- {said_at(steps)}: {message}" for message, steps in steps_of.items()]


def said_at(steps: list[int], shown: int = 5) -> str:
    if len(steps) == 1:
        return f"step {steps[0]}"
    more = f", ... ({len(steps)} times in all)" if len(steps) > shown else ""
    return f"steps {', '.join(map(str, steps[:shown]))}{more}"


def sample_lines(out: RunDir) -> list[str]:
    path = out.samples
    if not path.exists():
        return ["none recorded"]
    samples = [json.loads(line) for line in path.read_text().splitlines()]
    steps = sorted({s["step"] for s in samples})
    lines = []
    for step, label in ((steps[0], "early"), (steps[-1], "late")):
        lines += [f"### {label}: step {step}", ""]
        for s in (s for s in samples if s["step"] == step):
            # TRL logs a reward that does not apply to a row (None) as NaN: left out either way
            rewards = ", ".join(f"{k} {v:.2g}" for k, v in s["rewards"].items() if v is not None and v == v)
            lines += [f"- prompt: `{_short(s['prompt'])}`", f"  completion: `{_short(*_shown(s))}`",
                      f"  rewards: {rewards}"] + picture_line(out, s)
        lines.append("")
        if steps[0] == steps[-1]:
            break
    return lines


def picture_line(out: RunDir, sample: dict) -> list[str]:
    """A vision sample's picture, shown under its answer (kept by kit.monitor.samples)."""
    picture = sample.get("picture")
    if not picture or not (out.root / picture).is_file():
        return []
    return [f"  picture ({sample.get('image', picture)}): ![{Path(picture).stem}]({picture})"]


def _shown(sample: dict) -> tuple[str, int]:
    """A sample's completion as text, and how much of it to show: a tool-using one as its whole transcript,
    given room for its turns. Its messages are under "completion" (under "transcript" in earlier runs' files,
    whose "completion" was text)."""
    completion = sample.get("transcript", sample["completion"])
    if isinstance(completion, str):
        return completion, 160
    return transcript_text(completion), 400 if len(completion) > 1 else 160


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).replace("`", "'")
    return text if len(text) <= limit else text[:limit] + "..."
