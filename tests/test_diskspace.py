"""kit.diskspace: a full disk is recognised however the library that hit it reports it, and said in one line."""

import errno

from kit.diskspace import disk_full_error, is_disk_full, size_text
from kit.train.checkpoints import remove_incomplete_checkpoints


def test_full_disk_is_found_as_cause_or_in_the_message():
    full = OSError(errno.ENOSPC, "No space left on device")
    try:
        try:
            raise full
        except OSError as err:
            raise RuntimeError("PytorchStreamWriter failed writing file data/0") from err
    except RuntimeError as wrapped:
        assert is_disk_full(wrapped)  # torch.save's own error, with the OSError as its cause
    assert is_disk_full(RuntimeError("safetensors: No space left on device (os error 28)"))
    assert not is_disk_full(PermissionError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(RuntimeError("shape mismatch"))


def test_message_names_the_file_free_and_needed_space(tmp_path):
    err = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "metrics.jsonl"))
    message = str(disk_full_error("a checkpoint", tmp_path / "checkpoints", 3 * 1024**2, err))
    assert message.startswith(f"the disk is full: writing {tmp_path / 'metrics.jsonl'} failed (")
    assert "free there, about 3.0 MB needed); free some space" in message
    assert [size_text(n) for n in (512, 2048, 5 * 1024**3)] == ["512 bytes", "2.0 KB", "5.0 GB"]


def test_only_the_checkpoint_cut_short_is_removed(tmp_path):
    done, cut = tmp_path / "checkpoint-2", tmp_path / "checkpoint-4"
    for folder in (done, cut):
        folder.mkdir()
        (folder / "adapter_model.safetensors").write_bytes(b"w")
    (done / "trainer_state.json").write_text("{}")  # the trainer writes it last
    remove_incomplete_checkpoints(tmp_path)
    assert done.exists() and not cut.exists()
