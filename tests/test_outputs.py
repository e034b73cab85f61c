from pathlib import Path

from kit.outputs import LOCK_NAME, RunDir, eval_file_name, run_file_beside, run_of


def test_every_file_of_a_run_has_its_documented_name(tmp_path):
    run = RunDir(tmp_path)
    named = {run.run_file: "run.yaml", run.metrics: "metrics.jsonl", run.eval: "eval.json",
             run.samples: "samples.jsonl", run.diagnostics: "diagnostics.jsonl", run.report: "report.md",
             run.distributed: "distributed.json", run.plots: "plots", run.run_plot: "plots/run.png",
             run.metrics_plot: "plots/metrics.png", run.adapter: "adapter", run.merged: "merged", run.gguf: "gguf",
             run.checkpoints: "checkpoints", run.sft_checkpoints: "checkpoints-sft", run.lock: LOCK_NAME}
    assert {path: str(path.relative_to(tmp_path)) for path in named} == named


def test_a_run_dir_stands_in_for_its_path(tmp_path):
    run = RunDir(str(tmp_path))
    assert run.root == tmp_path and Path(run) == tmp_path and str(run) == str(tmp_path)
    assert RunDir(run) == run  # wrapping twice changes nothing


def test_early_entries_are_what_a_run_writes_before_its_first_checkpoint(tmp_path):
    assert RunDir(tmp_path).early_entries() == {"run.yaml", "recipe", "held_out.json", "metrics.jsonl", "eval.json",
                                                "samples.jsonl", "samples", "diagnostics.jsonl", "distributed.json",
                                                "plots", "checkpoints", "checkpoints-sft"}


def test_finished_outputs_are_the_ones_present(tmp_path):
    run = RunDir(tmp_path)
    assert run.finished_outputs() == []
    run.merged.mkdir()
    run.report.write_text("# report")
    assert run.finished_outputs() == [run.merged, run.report]


def test_a_saved_model_knows_its_run(tmp_path):
    assert run_of(tmp_path / "merged") == RunDir(tmp_path)
    assert run_of(tmp_path / "adapter") == RunDir(tmp_path)
    assert run_of(tmp_path / "my-model") is None
    assert run_file_beside(tmp_path / "adapter") == tmp_path / "run.yaml"
    assert eval_file_name(tmp_path / "merged", "test") == "eval-merged-test.json"


def test_a_run_section_is_added_then_replaced_and_the_rest_kept_as_written(tmp_path):
    import yaml

    from kit.outputs import write_run_section

    run_file = tmp_path / "run.yaml"
    run_file.write_text("recipe: gsm8k\nmodel:\n  name: x\n  target_modules:\n  - q_proj\n"
                        "# what this run used; ignored when read back\nversions:\n  trl: 1.15.0\n")
    write_run_section(run_file, "trainer", {"grpo": {"epsilon_high": 0.2}})
    write_run_section(run_file, "memory", {"measured": "no GPU"})
    write_run_section(run_file, "trainer", {"grpo": {"epsilon_high": 0.28}})  # a resumed run writes it again
    text = run_file.read_text()
    assert text.startswith("recipe: gsm8k\nmodel:\n  name: x\n  target_modules:\n  - q_proj\n# what this run used")
    record = yaml.safe_load(text)
    assert record["trainer"] == {"grpo": {"epsilon_high": 0.28}} and text.count("trainer:") == 1
    assert record["memory"] == {"measured": "no GPU"} and record["versions"] == {"trl": "1.15.0"}
    assert record["model"] == {"name": "x", "target_modules": ["q_proj"]}
