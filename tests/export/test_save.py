"""The save-format registry (kit.config.formats) and the save step that follows it (kit.export.save)."""

import importlib

import pytest

from kit.config import SAVE_FORMATS, build_config
from kit.config.formats import FORMAT_NAMES, FORMATS, SaveFormat, format_problems
from kit.errors import KitError
from kit.export import save
from kit.export.save import SaveJob, save_formats
from kit.outputs import RunDir

WRITTEN = []


def write_first(job):
    WRITTEN.append("first")
    return job.out.root / "first"


def write_second(job):
    WRITTEN.append(("second", sorted(job.written)))
    job.failed.append("second")
    return job.out.root / "second"


FAKE = (SaveFormat("first", f"{__name__}:write_first", "first"),
        SaveFormat("second", f"{__name__}:write_second", "second", made_from="first", describe="the second"))


def unloaded_job(out) -> SaveJob:
    return SaveJob(model=None, tokenizer=None, out=RunDir(out), settings=None, base_model="base", full_finetuning=False)


def test_the_config_accepts_exactly_the_registered_formats():
    assert SAVE_FORMATS == FORMAT_NAMES == ("lora", "merged_16bit", "gguf", "hub")
    with pytest.raises(KitError, match="save.formats.0: Input should be"):
        build_config([{"save": {"formats": ["onnx"]}}])


def test_every_writer_is_a_function_the_save_step_can_import():
    for fmt in FORMATS:
        module, _, function = fmt.writer.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), fmt.name


def test_a_format_without_the_one_it_is_made_from_is_a_config_problem():
    assert format_problems(["lora", "gguf"]) == ["save.formats: gguf is made from the merged 16-bit model; "
                                                 "add merged_16bit"]
    assert format_problems(["merged_16bit", "gguf"]) == []


def test_formats_are_written_in_the_registry_order_and_failures_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(save, "FORMATS", FAKE)
    WRITTEN.clear()
    job = save_formats(unloaded_job(tmp_path), ["second", "first"])
    assert WRITTEN == ["first", ("second", ["first"])]
    assert job.written == {"first": tmp_path / "first", "second": tmp_path / "second"} and job.failed == ["second"]


def test_an_adapter_written_only_for_merging_is_removed(tmp_path, monkeypatch):
    writes = []
    monkeypatch.setattr(save, "FORMATS", FAKE)
    monkeypatch.setattr("kit.export.merged.save_adapter",
                        lambda model, tokenizer, out: writes.append(out) or out.mkdir())
    job = unloaded_job(tmp_path)
    assert job.adapter() == job.adapter() == tmp_path / "adapter" and writes == [tmp_path / "adapter"]  # once
    save_formats(job, ["first"])
    assert not (tmp_path / "adapter").exists()  # lora was not asked for

    (tmp_path / "kept").mkdir()
    kept = unloaded_job(tmp_path / "kept")
    kept.adapter()
    save_formats(kept, ["first", "lora"])
    assert (tmp_path / "kept" / "adapter").is_dir()
