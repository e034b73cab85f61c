"""kit.atomic: whole-or-nothing folders, sweeping what killed processes left, one build across processes."""

from pathlib import Path

from kit.atomic import build_locked, remove_partials


def test_a_build_sweeps_what_a_killed_builder_left(tmp_path):
    path = tmp_path / "tiny-llama-v4"
    stale = tmp_path / ".tiny-llama-v4.partial-k9"  # as a builder killed with -9 leaves it
    stale.mkdir()
    (stale / "model.safetensors").write_text("half")
    other = tmp_path / ".smollm2.partial-x"  # another model's build: its own lock, not this one's to sweep

    other.mkdir()
    build_locked(path, lambda tmp: (tmp / "config.json").write_text("{}"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".smollm2.partial-x", ".tiny-llama-v4.lock", "tiny-llama-v4"]


def test_remove_partials_keeps_everything_else(tmp_path):
    for name in (".merged.partial-a", ".adapter.partial-b", "merged", ".run.lock", "partial-notes.txt"):
        (tmp_path / name).mkdir()
    removed = remove_partials(tmp_path)
    assert sorted(p.name for p in removed) == [".adapter.partial-b", ".merged.partial-a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.lock", "merged", "partial-notes.txt"]
    assert remove_partials(Path(tmp_path / "absent")) == []
