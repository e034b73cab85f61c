"""OUT/report.md, from a run folder written by hand with the kit's own writers: each section says what a reader
needs, and a run that left only run.yaml still gets a report."""

import json
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from kit.config import RunConfig
from kit.eval.evaluate import EvalResult, format_table, write_json
from kit.monitor.health import Diagnostic
from kit.monitor.report import write_report
from kit.monitor.samples import SampleLogger

BEFORE = EvalResult("before", 20, 0.10, 0.25, 0.40, {"answer_correct": 0.10}, 80.0)
AFTER = EvalResult("after", 20, 0.55, 0.60, 0.95, {"answer_correct": 0.55}, 64.5)


def make_run(tmp_path: Path, settings: dict | None = None, evaluations=(), diagnostics=(), samples=None,
             plots=(), processes=None) -> Path:
    """A run folder as kit.train.run leaves it; only run.yaml is always there.

    samples: {step: [(prompt, completion, {reward: value})]}, written by the kit's SampleLogger.
    """
    out = tmp_path / "gsm8k-run"
    out.mkdir()
    record = RunConfig.model_validate(settings or {}).model_dump(mode="json")  # as kit.train.run.write_run_file
    (out / "run.yaml").write_text(yaml.safe_dump(record, sort_keys=False) + "# what this run used\n"
                                  + yaml.safe_dump({"versions": {"kit": "0.1.0", "gpu": "none"}}))
    if evaluations:
        write_json(out / "eval.json", list(evaluations))
    for step, code, message in diagnostics:
        with (out / "diagnostics.jsonl").open("a") as f:
            f.write(json.dumps(asdict(Diagnostic(code, step, message))) + "\n")
    for step, batch in (samples or {}).items():
        logger = SampleLogger(out / "samples.jsonl", every=1, count=len(batch))
        logger.trainer = SimpleNamespace(_logs={  # TRL keeps its latest generation batch here
            "prompt": [[{"role": "user", "content": prompt}] for prompt, _, _ in batch],
            "completion": [[{"role": "assistant", "content": completion}] for _, completion, _ in batch],
            "rewards": {name: [rewards[name] for _, _, rewards in batch] for name in batch[0][2]}})
        logger.on_log(None, SimpleNamespace(is_world_process_zero=True, global_step=step), None, logs={"reward": 0.5})
    for name in plots:
        (out / "plots").mkdir(exist_ok=True)
        (out / "plots" / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    if processes is not None:  # the shape kit.monitor.distributed.RankReport writes
        (out / "distributed.json").write_text(json.dumps(processes, indent=2))
    return out


def report(out: Path, timings: dict | None = None, table: str | None = None) -> str:
    path = write_report(out, timings or {}, table)
    assert path == out / "report.md", f"the report went to {path}"
    return path.read_text()


def section(text: str, title: str) -> list[str]:
    """The lines under `## title`, up to the next section, blank lines dropped."""
    assert f"## {title}\n" in text, f"no section '{title}' in:\n{text}"
    body = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in body.splitlines() if line.strip()]


def test_report_is_titled_with_the_run_folder_and_lists_each_timing_in_seconds(tmp_path):
    text = report(make_run(tmp_path), {"load": 12.345, "grpo training": 300, "whole run": 0.04})
    assert text.startswith("# Run report: gsm8k-run\n")
    assert section(text, "Timings") == ["- load: 12.3 s", "- grpo training: 300.0 s", "- whole run: 0.0 s"]


def test_held_out_table_is_shown_verbatim_in_a_code_block(tmp_path):
    table = format_table([BEFORE, AFTER])
    text = report(make_run(tmp_path, evaluations=[BEFORE, AFTER]), table=table)
    assert section(text, "Held-out evaluation") == ["```", *table.splitlines(), "```"]
    assert "not run" not in text


SIXTEEN_BIT = {"model": {"load_in_4bit": False}}  # what a multi-process run needs


@pytest.mark.parametrize("settings, reason", [
    ({"eval": {"n": 0}}, "eval.n = 0"),
    ({"data": {"path": "prompts.jsonl"}, "eval": {"holdout": 0}}, (
        "training data is the local file prompts.jsonl, eval.path is not set and eval.holdout is 0; set eval.path to "
        "a held-out file, or eval.holdout to a share of this one, to score before and after")),
    ({"launch": {"num_processes": 2, "launcher": "zero3"}, **SIXTEEN_BIT},
     "with launch.launcher=zero3 no single process holds the whole model; score OUT/merged with python -m kit eval"),
    ({"launch": {"num_processes": 2, "launcher": "fsdp"}, "grpo": {"optim": "adamw_torch"}, **SIXTEEN_BIT,
      "eval": {"n": 0}}, "eval.n = 0"),  # the user's own setting comes first
    # rank 0 scores
    ({"launch": {"num_processes": 2, "launcher": "ddp"}, **SIXTEEN_BIT}, "no held-out rows were scored"),
    ({"launch": {"num_processes": 1, "launcher": "zero3"}, **SIXTEEN_BIT}, "no held-out rows were scored"),
    ({}, "no held-out rows were scored"),
])
def test_report_says_why_evaluation_was_skipped(tmp_path, settings, reason):
    text = report(make_run(tmp_path, settings))
    assert section(text, "Held-out evaluation") == [f"not run: {reason}"]


def test_each_health_diagnostic_is_listed_with_its_step_in_order(tmp_path):
    out = make_run(tmp_path, diagnostics=[
        (1, "beta_zero", "note: beta = 0 (TRL's default): no reference model"),
        (14, "clipped", "97% of completions hit max_completion_length: raise it")])
    assert section(report(out), "Health diagnostics") == [
        "- step 1: note: beta = 0 (TRL's default): no reference model",
        "- step 14: 97% of completions hit max_completion_length: raise it"]


def test_a_run_without_diagnostics_says_none_were_raised(tmp_path):
    assert section(report(make_run(tmp_path)), "Health diagnostics") == ["none raised"]


def test_samples_show_the_first_and_last_logged_step_with_their_rewards(tmp_path):
    out = make_run(tmp_path, samples={
        1: [("What is 2 plus 3?", "<answer>\n6\n</answer>", {"correct": 0.0, "format": 1.0})],
        10: [("middle", "not shown", {"correct": 0.0, "format": 0.0})],
        20: [("What is 2 plus 3?", "<answer>5</answer>", {"correct": 1.0, "format": 0.5}),
             ("What is 4 plus 4?", "eight", {"correct": 0.0, "format": 0.125})]})
    assert section(report(out), "Sample completions") == [
        "### early: step 1",
        "- prompt: `What is 2 plus 3?`", "  completion: `<answer> 6 </answer>`", "  rewards: correct 0, format 1",
        "### late: step 20",
        "- prompt: `What is 2 plus 3?`", "  completion: `<answer>5</answer>`", "  rewards: correct 1, format 0.5",
        "- prompt: `What is 4 plus 4?`", "  completion: `eight`", "  rewards: correct 0, format 0.12",
    ]


def test_a_reward_that_does_not_apply_to_a_sample_is_left_out(tmp_path):
    out = make_run(tmp_path, samples={1: [("q", "a", {"correct": float("nan"), "format": 1.0})]})
    assert "  rewards: format 1" in section(report(out), "Sample completions")


def test_samples_from_a_single_step_are_shown_once(tmp_path):
    out = make_run(tmp_path, samples={1: [("q", "a", {"correct": 1.0})]})
    assert section(report(out), "Sample completions") == [
        "### early: step 1", "- prompt: `q`", "  completion: `a`", "  rewards: correct 1"]


def test_a_long_completion_is_cut_and_cannot_break_out_of_its_code_span(tmp_path):
    completion = "```python\nprint(1)\n```\n" + "x" * 300
    out = make_run(tmp_path, samples={1: [("q", completion, {"correct": 1.0})]})
    line = next(line for line in section(report(out), "Sample completions") if "completion:" in line)
    assert line.startswith("  completion: `'''python print(1) ''' xxx") and line.endswith("...`")
    assert line.count("`") == 2 and len(line) == len("  completion: ``") + 160 + len("...")


def test_a_run_without_samples_says_none_were_recorded(tmp_path):
    assert section(report(make_run(tmp_path)), "Sample completions") == ["none recorded"]


def test_plots_are_linked_only_when_their_png_exists(tmp_path):
    out = make_run(tmp_path, plots=["run.png", "notes.txt"])
    assert section(report(out), "Plots") == ["![run](plots/run.png)"]


def test_both_plots_are_linked_in_name_order(tmp_path):
    out = make_run(tmp_path, plots=["run.png", "metrics.png"])
    assert section(report(out), "Plots") == ["![metrics](plots/metrics.png)", "![run](plots/run.png)"]


def test_the_config_section_holds_run_yaml_as_written(tmp_path):
    out = make_run(tmp_path, {"seed": 7, "grpo": {"beta": 0.04}})
    run_yaml = (out / "run.yaml").read_text().rstrip()
    text = report(out)
    assert section(text, "Config and versions (run.yaml)") == ["```yaml", *run_yaml.splitlines(), "```"]
    assert "seed: 7" in run_yaml and "beta: 0.04" in run_yaml and "versions:" in run_yaml


def test_a_run_that_left_only_run_yaml_still_gets_every_section(tmp_path):
    text = report(make_run(tmp_path))
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## Timings", "## Held-out evaluation", "## Health diagnostics", "## Plots", "## Sample completions",
        "## Config and versions (run.yaml)"]
    assert section(text, "Timings") == [] and section(text, "Plots") == []


def test_a_multi_process_run_gets_one_row_per_process(tmp_path):
    rank = {"host": "h", "optimizer_steps": 3, "completions_per_step": [4, 4, 4], "last_step": 3}
    processes = {"num_processes": 2, "launcher": "ddp", "backend": "gloo", "ranks": [
        {**rank, "rank": 0, "device": "cuda:0", "trainable_norm_start": 0.612345678, "trainable_norm_end": 0.63},
        {**rank, "rank": 1, "device": "cuda:1", "completions_per_step": [4, 2, 4],
         "trainable_norm_start": None, "trainable_norm_end": None}]}
    assert section(report(make_run(tmp_path, processes=processes)), "Processes") == [
        "2 processes, launcher ddp, backend gloo",
        "| rank | device | steps | completions per step | trainable norm before -> after |",
        "| --- | --- | ---: | --- | --- |",
        "| 0 | cuda:0 | 3 | 4 | 0.612346 -> 0.63 |",
        "| 1 | cuda:1 | 3 | 2, 4 | n/a (sharded) |"]


def test_a_single_process_run_has_no_processes_section(tmp_path):
    assert "## Processes" not in report(make_run(tmp_path))


TOOL_TURNS = [{"role": "assistant", "content": "", "tool_calls": [
                  {"type": "function", "function": {"name": "python", "arguments": {"code": "120 * 5"}}}]},
              {"role": "tool", "name": "python", "content": "600"},
              {"role": "assistant", "content": "<answer>600</answer>"}]


def test_a_tool_using_completion_is_shown_as_its_whole_transcript(tmp_path):
    out = make_run(tmp_path)
    logger = SampleLogger(out / "samples.jsonl", every=1, count=1)
    logger.trainer = SimpleNamespace(_logs={"prompt": [[{"role": "user", "content": "q"}]], "completion": [TOOL_TURNS],
                                            "rewards": {"correct": [1.0]}})
    logger.on_log(None, SimpleNamespace(is_world_process_zero=True, global_step=1), None, logs={"reward": 0.5})
    assert "  completion: `[call python({'code': '120 * 5'})] [python -> 600] <answer>600</answer>`" in section(
        report(out), "Sample completions")


def test_samples_written_as_text_by_earlier_runs_are_still_shown(tmp_path):
    """Before completions were kept as messages: the text, and a tool-using one's messages under "transcript"."""
    out = make_run(tmp_path)
    lines = [{"step": 1, "prompt": "q", "completion": "plain text", "rewards": {"correct": 1.0}},
             {"step": 1, "prompt": "r", "completion": "<answer>600</answer>", "transcript": TOOL_TURNS,
              "rewards": {"correct": 1.0}}]
    (out / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    shown = [line for line in section(report(out), "Sample completions") if "completion:" in line]
    assert shown == ["  completion: `plain text`",
                     "  completion: `[call python({'code': '120 * 5'})] [python -> 600] <answer>600</answer>`"]


def test_a_diagnostic_that_comes_back_is_one_line_with_its_steps(tmp_path):
    stuck = "reward answer_format stuck at its maximum (1) for 5 steps"
    out = make_run(tmp_path, diagnostics=[(1, "beta_zero", "note: beta = 0")] +
                   [(step, "stuck", stuck) for step in (39, 66, 80, 88, 143, 162, 173)] + [(200, "stuck", "other")])
    assert section(report(out), "Health diagnostics") == [
        "- step 1: note: beta = 0", f"- steps 39, 66, 80, 88, 143, ... (7 times in all): {stuck}", "- step 200: other"]


def test_a_vision_sample_shows_the_picture_it_saw(tmp_path):
    out = make_run(tmp_path)
    (out / "samples").mkdir()
    (out / "samples" / "row-4.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    sample = {"step": 1, "prompt": "How many circles?", "completion": "<answer>3</answer>", "image": "training row 4",
              "picture": "samples/row-4.png", "rewards": {"correct": 1.0}}
    gone = {**sample, "picture": "samples/row-9.png", "image": "training row 9"}  # deleted since: not linked
    (out / "samples.jsonl").write_text(json.dumps(sample) + "\n" + json.dumps(gone) + "\n")
    lines = section(report(out), "Sample completions")
    assert "  picture (training row 4): ![row-4](samples/row-4.png)" in lines
    assert not any("row-9" in line for line in lines)
