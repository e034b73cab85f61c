"""One run per OUT, and what a run may find there: a lock, an abandoned start, broken checkpoints, a finished run."""

import json
import os
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import save_file

from kit.config import build_config
from kit.errors import KitError
from kit.train.checkpoints import latest_complete
from kit.train.output_folder import claim_output
from kit.train.resume import SaveEveryMinutes
from kit.train.run_lock import LOCK_NAME, RUN_LOCK_ENV, hold_run_lock
from tests.conftest import REPO

HOLD_LOCK = "import sys, time; from kit.train.run_lock import hold_run_lock\nwith hold_run_lock(sys.argv[1]):\n" \
            "    print('held', flush=True); time.sleep(120)"


@pytest.fixture
def lock_holder(tmp_path):
    """Another process holding OUT's lock, as a run in progress does."""
    out = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    yield out, process
    process.kill()
    process.wait()


def test_a_second_run_into_a_locked_out_is_refused_with_the_pid(lock_holder):
    out, process = lock_holder
    with pytest.raises(KitError, match=rf"{out} is in use by another run \(process {process.pid}\)"), \
            hold_run_lock(out):
        pytest.fail("took a lock another process holds")


def test_the_lock_goes_with_a_killed_process(lock_holder):
    out, process = lock_holder
    process.send_signal(signal.SIGKILL)
    process.wait()
    with hold_run_lock(out):  # no stale lock: the OS released it
        assert (out / LOCK_NAME).read_text() == f"{os.getpid()}\n"


def test_ranks_under_the_launcher_leave_the_lock_to_it(lock_holder, monkeypatch):
    out, _ = lock_holder
    monkeypatch.setenv(RUN_LOCK_ENV, str(out.resolve()))  # rank 0 of a launched run
    with hold_run_lock(out):
        pass
    monkeypatch.delenv(RUN_LOCK_ENV)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")  # other ranks write nothing to OUT
    with hold_run_lock(out):
        pass


def write_checkpoint(folder, step, max_steps=4):
    folder.mkdir(parents=True)
    save_file({"w": torch.zeros(64)}, str(folder / "adapter_model.safetensors"))
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": max_steps}))
    return folder


def test_resume_skips_checkpoints_cut_short_and_says_so(tmp_path, capsys):
    (tmp_path / "run.yaml").write_text("{}")
    checkpoints = tmp_path / "checkpoints"
    whole = write_checkpoint(checkpoints / "checkpoint-2", 2)
    no_state = write_checkpoint(checkpoints / "checkpoint-3", 3)
    (no_state / "trainer_state.json").unlink()
    truncated = write_checkpoint(checkpoints / "checkpoint-10", 10)
    weights = truncated / "adapter_model.safetensors"
    os.truncate(weights, weights.stat().st_size - 8)

    assert claim_output(build_config([]), tmp_path, resume=True) == whole
    printed = capsys.readouterr().out
    assert f"resume: skipping {truncated}: incomplete, adapter_model.safetensors is cut short" in printed
    assert f"resume: skipping {no_state}: incomplete, no trainer_state.json" in printed
    assert [p.name for p in checkpoints.iterdir()] == ["checkpoint-2"], "the trainer would rotate or save into them"


def test_a_state_file_cut_short_is_incomplete(tmp_path):
    checkpoint = write_checkpoint(tmp_path / "checkpoint-5", 5)
    (checkpoint / "trainer_state.json").write_text('{"global_step": 5, "max_')
    assert latest_complete(tmp_path) == (None, [(checkpoint, "trainer_state.json is cut short")])


def test_resuming_a_finished_run_is_refused(tmp_path):
    (tmp_path / "run.yaml").write_text("{}")
    (tmp_path / "report.md").write_text("done")
    (tmp_path / "merged").mkdir()
    write_checkpoint(tmp_path / "checkpoints" / "checkpoint-4", 4)
    with pytest.raises(KitError, match=rf"{tmp_path} is finished: all 4 planned GRPO steps .*{tmp_path / 'merged'}"):
        claim_output(build_config([{"grpo": {"max_steps": 4}}]), tmp_path, resume=True)
    with pytest.raises(KitError, match="all 4 planned"):  # max_steps -1: the plan the trainer worked out
        claim_output(build_config([]), tmp_path, resume=True)
    # more steps than were planned: the run goes on
    cfg = build_config([{"grpo": {"max_steps": 6}}])
    assert claim_output(cfg, tmp_path, resume=True) == tmp_path / "checkpoints" / "checkpoint-4"


def test_a_start_that_never_checkpointed_is_cleared_for_a_retry(tmp_path, capsys):
    for name in ("run.yaml", "metrics.jsonl", "eval.json"):
        (tmp_path / name).write_text("{}")
    write_checkpoint(tmp_path / "checkpoints" / "checkpoint-1", 1)
    (tmp_path / "checkpoints" / "checkpoint-1" / "trainer_state.json").unlink()  # killed while saving it
    (tmp_path / ".merged.partial-x").mkdir()
    (tmp_path / LOCK_NAME).write_text("123\n")
    claim_output(build_config([]), tmp_path, resume=False)
    assert [p.name for p in tmp_path.iterdir()] == [LOCK_NAME]
    assert "stopped before its first checkpoint" in capsys.readouterr().out


def test_a_folder_with_anything_else_is_still_refused(tmp_path):
    (tmp_path / "run.yaml").write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")  # not something the kit writes: never cleared
    with pytest.raises(KitError, match="is not empty"):
        claim_output(build_config([]), tmp_path, resume=False)
    write_checkpoint(tmp_path / "checkpoints" / "checkpoint-2", 2)
    (tmp_path / "notes.txt").unlink()
    with pytest.raises(KitError, match="is not empty"):  # a checkpoint to continue from: resume it instead
        claim_output(build_config([]), tmp_path, resume=False)


def test_leftover_partial_folders_are_swept(tmp_path):
    (tmp_path / "run.yaml").write_text("{}")
    write_checkpoint(tmp_path / "checkpoints" / "checkpoint-2", 2)
    (tmp_path / ".merged.partial-x").mkdir()
    (tmp_path / "gguf").mkdir()
    (tmp_path / "gguf" / ".export.partial-y").mkdir()
    claim_output(build_config([]), tmp_path, resume=True)
    assert not (tmp_path / ".merged.partial-x").exists() and list((tmp_path / "gguf").iterdir()) == []


class Control:
    should_save = False


def test_a_checkpoint_is_asked_for_once_the_minutes_have_passed():
    now = [1000.0]
    saver = SaveEveryMinutes(10, clock=lambda: now[0])
    saver.on_train_begin(None, None, Control())
    control = Control()
    now[0] += 599
    saver.on_step_end(None, None, control)
    assert not control.should_save
    now[0] += 1
    saver.on_step_end(None, None, control)
    assert control.should_save
    saver.on_save(None, None, control)  # the clock restarts at each checkpoint, whatever asked for it
    control = Control()
    now[0] += 599
    saver.on_step_end(None, None, control)
    assert not control.should_save


def test_a_refused_run_leaves_out_as_it_found_it(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(KitError, match="bad data"), hold_run_lock(out):
        raise KitError("bad data")
    assert not out.exists()
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(KitError, match="is not empty"), hold_run_lock(out):
        claim_output(build_config([]), out, resume=False)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
