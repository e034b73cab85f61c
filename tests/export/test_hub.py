"""Uploading a run, against a local stand-in for the hub (huggingface_hub.HfApi's four calls the kit makes,
writing into a folder): what lands where, and the model card it writes."""

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from kit.cli import main
from kit.errors import KitError
from kit.eval.evaluate import EvalResult
from kit.export.hub import hub_token, push_run
from kit.outputs import VERIFICATION, RunDir


class LocalHub:
    """HfApi's create_repo / upload_folder / upload_file, into `root/<repo_id>/`."""

    def __init__(self, root: Path, token=None):
        self.root, self.token, self.created = Path(root), token, []

    def create_repo(self, repo_id, exist_ok=False, private=False):
        self.created.append((repo_id, private))
        (self.root / repo_id).mkdir(parents=True, exist_ok=exist_ok)
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, folder_path, repo_id, path_in_repo="", commit_message=None):
        shutil.copytree(folder_path, self.root / repo_id / path_in_repo, dirs_exist_ok=True)

    def upload_file(self, path_or_fileobj, repo_id, path_in_repo, commit_message=None):
        target = self.root / repo_id / path_in_repo
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(path_or_fileobj, bytes):
            target.write_bytes(path_or_fileobj)
        else:
            shutil.copy(path_or_fileobj, target)


def finished_run(root: Path) -> RunDir:
    run = RunDir(root)
    for folder in (run.merged, run.adapter, run.gguf, run.plots):
        folder.mkdir(parents=True)
    (run.merged / "model.safetensors").write_bytes(b"weights")
    (run.adapter / "adapter_config.json").write_text("{}")
    (run.gguf / "run.Q8_0.gguf").write_bytes(b"GGUF")
    (run.gguf / VERIFICATION).write_text(json.dumps([{"file": str(run.gguf / "run.Q8_0.gguf"), "quant": "q8_0",
                                                      "ok": True, "checks": []}]))
    (run.plots / "run.png").write_bytes(b"png")
    run.run_file.write_text(yaml.safe_dump({"recipe": "json_extract", "model": {"name": "kit:smollm2", "lora_rank": 16},
                                            "grpo": {"learning_rate": 5e-5, "num_generations": 8},
                                            "stages": ["sft", "grpo"], "versions": {"trl": "1.15.0"}}))
    scores = [EvalResult("before", 32, 0.0, 0.0, 0.0, {"field_accuracy": 0.0}, 59.6),
              EvalResult("after grpo", 32, 0.5, 0.5, 0.9, {"field_accuracy": 0.7}, 31.0)]
    run.eval.write_text(json.dumps({"results": [asdict(r) for r in scores]}))
    return run


def test_a_run_is_pushed_with_its_models_record_and_card(tmp_path):
    run, hub = finished_run(tmp_path / "run"), LocalHub(tmp_path / "hub")
    message = push_run(run.root, "me/json-smollm2", "token", private=True, api=hub)
    repo = tmp_path / "hub" / "me" / "json-smollm2"
    assert hub.created == [("me/json-smollm2", True)]
    assert (repo / "model.safetensors").read_bytes() == b"weights"  # merged at the root: from_pretrained(repo)
    assert (repo / "adapter" / "adapter_config.json").is_file() and (repo / "gguf" / "run.Q8_0.gguf").is_file()
    assert (repo / "training" / "run.yaml").is_file() and (repo / "training" / "plots" / "run.png").is_file()
    assert "uploaded merged/, adapter/, gguf/, the training record, a model card to https://huggingface.co/" in message
    card = (repo / "README.md").read_text()
    assert card.startswith("---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\n")
    assert "`kit:smollm2` fine-tuned with GRPO on the `json_extract` recipe" in card
    assert "after grpo" in card and "50.0%" in card and "reward field_accuracy" in card  # the before/after table
    assert "`gguf/run.Q8_0.gguf`: for llama.cpp and Ollama (verified in llama.cpp against the merged model)" in card
    assert "grpo.learning_rate: `5e-05`" in card and "stages: sft, grpo" in card


def test_kit_push_from_the_command_line(tmp_path, monkeypatch, capsys):
    run = finished_run(tmp_path / "run")
    monkeypatch.setattr("huggingface_hub.HfApi", lambda token=None: LocalHub(tmp_path / "hub", token))
    monkeypatch.setenv("HF_TOKEN", "secret")
    assert main(["push", str(run.root), "--repo", "me/m"]) == 0
    assert "uploaded merged/" in capsys.readouterr().out
    assert (tmp_path / "hub" / "me" / "m" / "README.md").is_file()


def test_kit_push_without_a_token_says_how_to_get_one(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    assert main(["push", str(finished_run(tmp_path / "run").root), "--repo", "me/m"]) == 2
    assert "error: no hub token: set HF_TOKEN" in capsys.readouterr().err


def test_without_a_repo_or_a_token_the_upload_is_skipped_and_says_why(tmp_path):
    assert "no repository named" in push_run(tmp_path, "", "token")
    assert "no HF_TOKEN secret" in push_run(tmp_path, "me/model", None)


def test_a_run_without_models_is_refused_before_touching_the_hub(tmp_path):
    with pytest.raises(KitError, match="neither merged/ nor gguf/"):
        push_run(tmp_path, "me/model", "token", api=LocalHub(tmp_path / "hub"))
    assert not (tmp_path / "hub").exists()


def test_token_comes_from_the_environment_off_colab_and_kaggle(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setenv("HF_TOKEN", "abc")
    assert hub_token() == "abc"
    monkeypatch.delenv("HF_TOKEN")
    assert hub_token() is None


def test_the_hub_save_format_uploads_at_the_end_of_a_run(tmp_path, monkeypatch, capsys):
    from types import SimpleNamespace

    from kit.config import build_config
    from kit.export.hub import write_hub

    cfg = build_config([{"save": {"formats": ["lora", "merged_16bit", "hub"], "hub_repo": "me/run"}}])
    job = SimpleNamespace(out=finished_run(tmp_path / "run"), settings=cfg.save, failed=[])
    monkeypatch.setattr("huggingface_hub.HfApi", lambda token=None: LocalHub(tmp_path / "hub", token))
    monkeypatch.setenv("HF_TOKEN", "secret")
    assert write_hub(job) == "https://huggingface.co/me/run" and job.failed == []
    assert (tmp_path / "hub" / "me" / "run" / "README.md").is_file()
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    assert write_hub(job) is None
    assert f"kit push {job.out.root} --repo me/run" in capsys.readouterr().out


def test_the_hub_format_needs_a_repository_and_the_merged_model():
    from kit.config import build_config

    with pytest.raises(KitError) as err:
        build_config([{"save": {"formats": ["lora", "hub"]}}])
    assert "save.hub_repo is not set" in str(err.value) and "hub is made from the merged 16-bit model" in str(err.value)
