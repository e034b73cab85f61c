"""Upload a run's model to the Hugging Face hub, with the token from the notebook platform's secrets.

    message = push_run(Path("outputs/run"), "me/qwen-gsm8k", hub_token())   # skips cleanly without a token
    python -m kit push outputs/run --repo me/qwen-gsm8k [--private]       # the same from the command line
"""

from __future__ import annotations

import os
from pathlib import Path

from kit.config.rules import repo_id_problem
from kit.errors import KitError
from kit.export.model_card import TRAINING_FOLDER, model_card
from kit.outputs import RunDir

TOKEN_NAME = "HF_TOKEN"


def hub_token() -> str | None:
    """HF_TOKEN from Colab's or Kaggle's secrets, else the environment, else the token `hf auth login` saved;
    None when there is none."""
    try:  # Colab: the key icon in the left bar, with notebook access switched on
        from google.colab import userdata

        return userdata.get(TOKEN_NAME)
    except ImportError:
        pass
    except Exception:  # noqa: BLE001 - Colab raises its own SecretNotFoundError / NotebookAccessError
        return None
    try:  # Kaggle: Add-ons > Secrets
        from kaggle_secrets import UserSecretsClient

        return UserSecretsClient().get_secret(TOKEN_NAME)
    except ImportError:
        pass
    except Exception:  # noqa: BLE001 - Kaggle raises a plain exception when the secret is not attached
        return None
    if os.environ.get(TOKEN_NAME):
        return os.environ[TOKEN_NAME]
    from huggingface_hub import get_token  # `hf auth login`'s saved token, and HF_TOKEN_PATH

    return get_token() or None


def check_repo_id(repo_id: str) -> None:
    if problem := repo_id_problem(repo_id):
        raise KitError(problem)


def push_run(out: Path, repo_id: str, token: str | None, private: bool = False, api=None) -> str:
    """Upload a run to one model repo: OUT/merged at its root, OUT/adapter and OUT/gguf in folders of those
    names, the run's record (run.yaml, eval.json, metrics, report, plots) under training/, and a model card
    as README.md. Says what it did, or why it skipped (no repository named, no token)."""
    if not repo_id:
        return "hub upload skipped: no repository named (set HUB_REPO, e.g. your-name/qwen-gsm8k-grpo)"
    if not token:
        return f"hub upload skipped: no {TOKEN_NAME} secret (add one with write access to upload)"
    check_repo_id(repo_id)
    run = RunDir(out)
    folders = {path: name for path, name in ((run.merged, ""), (run.adapter, "adapter"), (run.gguf, "gguf"))
               if path.is_dir()}
    if not (run.merged.is_dir() or run.gguf.is_dir()):
        raise KitError(f"{out} has neither merged/ nor gguf/: train (and export) before uploading")
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    url = api.create_repo(repo_id, exist_ok=True, private=private)
    for folder, path_in_repo in folders.items():
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, path_in_repo=path_in_repo,
                          commit_message=f"grpo-kit: {folder.name}")
    for record in run_record(run):
        api.upload_file(path_or_fileobj=str(record), repo_id=repo_id,
                        path_in_repo=f"{TRAINING_FOLDER}/{record.relative_to(run.root)}",
                        commit_message="grpo-kit: the training record")
    api.upload_file(path_or_fileobj=model_card(run, repo_id).encode(), repo_id=repo_id, path_in_repo="README.md",
                    commit_message="grpo-kit: model card")
    uploaded = [f"{f.name}/" for f in folders] + ["the training record", "a model card"]
    return f"uploaded {', '.join(uploaded)} to {url}"


def run_record(run: RunDir) -> list[Path]:
    """What the run wrote about itself, for the repository's training/ folder."""
    files = [run.run_file, run.eval, run.metrics, run.report, run.diagnostics, run.samples]
    plots = sorted(run.plots.glob("*.png")) if run.plots.is_dir() else []
    return [f for f in files if f.is_file()] + plots


def write_hub(job) -> str | None:
    """The `hub` save format (kit.config.formats): the whole run to save.hub_repo, after the other formats."""
    token = hub_token()
    if not token:
        print(f"save: hub upload skipped: no {TOKEN_NAME} (set it, or run `hf auth login`; then kit push "
              f"{job.out.root} --repo {job.settings.hub_repo})")
        return None
    try:
        print(f"save: {push_run(job.out.root, job.settings.hub_repo, token, private=job.settings.hub_private)}")
    except (OSError, ValueError) as err:  # huggingface_hub's HTTP errors are OSErrors; a bad repo id a ValueError
        print(f"save: hub upload failed: {type(err).__name__}: {str(err).splitlines()[0]}")
        job.failed.append("hub")
    return f"https://huggingface.co/{job.settings.hub_repo}"

