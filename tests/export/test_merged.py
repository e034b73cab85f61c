import pytest

from kit.export.merged import atomic_dir
from kit.models.names import base_16bit_name


def test_atomic_dir_leaves_nothing_on_failure(tmp_path):
    final = tmp_path / "merged"
    with pytest.raises(RuntimeError):
        with atomic_dir(final) as tmp:
            (tmp / "model.safetensors").write_text("half")
            raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []


def test_atomic_dir_renames_on_success(tmp_path):
    final = tmp_path / "merged"
    with atomic_dir(final) as tmp:
        (tmp / "a").write_text("x")
    assert [p.name for p in tmp_path.iterdir()] == ["merged"]
    assert (final / "a").read_text() == "x"


@pytest.mark.parametrize(
    "name, base",
    [
        ("unsloth/Qwen2.5-1.5B-Instruct-bnb-4bit", "unsloth/Qwen2.5-1.5B-Instruct"),
        ("unsloth/Llama-3.2-1B-Instruct-unsloth-bnb-4bit", "unsloth/Llama-3.2-1B-Instruct"),
        ("Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct"),
    ],
)
def test_base_16bit_name(name, base):
    assert base_16bit_name(name) == base
