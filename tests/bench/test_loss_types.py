"""bench/loss_types.py without training: the run order, the command, what it reads from a run's folder (written by
the kit's own writers), and the table with each loss's mean."""

import pytest

import bench.loss_types as bench
from bench.loss_types import LOSSES, Result, loss_means, parse_args, read_run, run_order, table, train_command
from kit.eval.evaluate import EvalResult, write_json
from kit.monitor.report import write_report
from kit.outputs import RunDir


def scored(name: str, strict: float) -> EvalResult:
    return EvalResult(name=name, n=200, strict_accuracy=strict, lenient_accuracy=strict, format_compliance=1.0,
                      rewards={}, mean_length=7.0)


def finished_run(out, strict: dict[str, float], grpo_seconds: float, loss: str = "dapo", seed: int = 1):
    """A run's folder as the kit leaves it: eval.json and report.md, through the kit's own writers."""
    run = RunDir(out)
    out.mkdir()
    run.run_file.write_text(f"recipe: addition\nseed: {seed}\ngrpo:\n  loss_type: {loss}\n")
    write_json(run.eval, [scored(name, value) for name, value in strict.items()])
    write_report(run, {"load": 20.0, "sft training": 19.5, "grpo training": grpo_seconds, "whole run": 700.0}, "table")
    return out


def test_losses_alternate_within_each_seed():
    assert run_order([3407, 1], list(LOSSES)) == [
        (3407, "dapo"), (3407, "grpo"), (3407, "dr_grpo"), (3407, "gspo"),
        (1, "dapo"), (1, "grpo"), (1, "dr_grpo"), (1, "gspo")]


def test_the_command_is_the_demos_training_with_the_users_overrides_last(tmp_path):
    command = train_command(tmp_path / "run", "gspo", 1, 2, ["grpo.loss_type=dapo", "eval.n=20"])
    assert command[1:6] == ["-m", "kit", "train", "addition", "--config"]
    assert "configs/demo_smollm2.yaml" in command and "save.formats=[lora]" in command
    assert command.index("grpo.loss_type=gspo") < command.index("grpo.max_steps=2")
    assert command[-2:] == ["grpo.loss_type=dapo", "eval.n=20"]  # the user's win: they come last
    assert not any(part.startswith("grpo.max_steps") for part in train_command(tmp_path, "dapo", 1, None, []))


def test_the_options_default_to_four_losses_and_two_seeds():
    args = parse_args([])
    assert args.losses == ["dapo", "grpo", "dr_grpo", "gspo"] and len(args.seeds) >= 2
    args = parse_args(["--losses", "dapo", "gspo", "--seeds", "1", "--steps", "2", "--set", "eval.n=20"])
    assert (args.losses, args.seeds, args.steps, args.overrides) == (["dapo", "gspo"], [1], 2, ["eval.n=20"])


def test_a_run_is_read_from_its_eval_and_report(tmp_path):
    out = finished_run(tmp_path / "run", {"before": 0.0, "after sft": 0.43, "after grpo": 0.655}, 612.34)
    result = read_run(out, "gspo", 1)
    assert result == Result("gspo", 1, 0.0, 0.43, 0.655, 612.3)  # report.md keeps a tenth of a second
    assert round(result.gain, 3) == 0.225


def test_a_run_of_grpo_alone_and_a_run_that_wrote_nothing(tmp_path):
    alone = read_run(finished_run(tmp_path / "alone", {"before": 0.1, "after": 0.3}, 50.0), "dapo", 2)
    assert (alone.after_sft, alone.after_grpo, round(alone.gain, 3)) == (None, 0.3, 0.2)  # gain against before
    (tmp_path / "empty").mkdir()
    assert read_run(tmp_path / "empty", "dapo", 3) == Result("dapo", 3, None, None, None, None)


def test_each_loss_gets_the_mean_of_its_seeds_in_the_order_asked():
    results = [Result("dapo", 1, 0.0, 0.40, 0.60, 600.0), Result("gspo", 1, 0.0, 0.40, 0.70, 640.0),
               Result("dapo", 2, 0.0, 0.44, 0.66, 620.0), Result("gspo", 2, 0.0, 0.44, None, None)]
    dapo, gspo = loss_means(results, ["dapo", "gspo", "grpo"])  # grpo never ran: no row
    assert (dapo.seed, dapo.grpo_seconds) == ("mean of 2", 610.0)
    assert (round(dapo.after_sft, 6), round(dapo.after_grpo, 6)) == (0.42, 0.63)
    assert (gspo.after_grpo, gspo.grpo_seconds) == (0.70, 640.0)  # a missing figure is left out, not counted as 0


def test_the_table_has_every_run_then_the_means():
    results = [Result("dapo", 1, 0.0, 0.40, 0.60, 600.0), Result("grpo", 1, 0.0, 0.40, 0.55, 610.4)]
    lines = table(results, ["dapo", "grpo"])
    assert lines[0].startswith("| loss | seed | strict: before | after SFT | after GRPO | GRPO gain | GRPO wall")
    assert lines[2] == "| dapo | 1 | 0.0% | 40.0% | 60.0% | +20.0 | 600 s |"
    assert lines[3] == "| grpo | 1 | 0.0% | 40.0% | 55.0% | +15.0 | 610 s |"
    assert lines[4:] == ["| dapo | mean of 1 | 0.0% | 40.0% | 60.0% | +20.0 | 600 s |",
                         "| grpo | mean of 1 | 0.0% | 40.0% | 55.0% | +15.0 | 610 s |"]
    assert table([Result("gspo", 1, None, None, None, None)], ["gspo"])[2] == "| gspo | 1 | - | - | - | - | - |"


def test_a_bench_stopped_part_way_reads_its_finished_runs_and_trains_the_rest(tmp_path, monkeypatch, capsys):
    finished_run(tmp_path / "dapo-seed1", {"before": 0.0, "after sft": 0.4, "after grpo": 0.6}, 600.0)
    trained = []

    def fake_train(command, out):  # writes what a finished run writes, without training
        trained.append(out.name)
        finished_run(out, {"before": 0.0, "after sft": 0.4, "after grpo": 0.5}, 610.0, loss="gspo")

    monkeypatch.setattr(bench, "train", fake_train)
    bench.main(["--losses", "dapo", "gspo", "--seeds", "1", "--out", str(tmp_path)])
    assert trained == ["gspo-seed1"]
    printed = capsys.readouterr().out
    assert f"run 1/2: dapo, seed 1, read from {tmp_path / 'dapo-seed1'}, not trained again" in printed
    assert "| dapo | 1 | 0.0% | 40.0% | 60.0% | +20.0 | 600 s |" in printed


def test_a_run_folder_without_a_finished_run_is_refused(tmp_path, monkeypatch):
    (tmp_path / "dapo-seed1").mkdir()  # a run killed before its evaluation
    monkeypatch.setattr(bench, "train", lambda command, out: pytest.fail("trained over a folder"))
    with pytest.raises(SystemExit, match="holds no finished run"):
        bench.main(["--losses", "dapo", "--seeds", "1", "--out", str(tmp_path)])


def test_a_finished_run_trained_with_other_settings_is_refused(tmp_path, monkeypatch):
    finished_run(tmp_path / "dapo-seed1", {"before": 0.0, "after sft": 0.4, "after grpo": 0.6}, 600.0)
    monkeypatch.setattr(bench, "train", lambda command, out: pytest.fail("trained over a folder"))
    with pytest.raises(SystemExit, match=r"other settings \(grpo.max_steps: None there, 2 here\)"):
        bench.main(["--losses", "dapo", "--seeds", "1", "--steps", "2", "--out", str(tmp_path)])
