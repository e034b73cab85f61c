"""Upload a run's model to the Hugging Face hub, with the token from the notebook platform's secrets.

    message = push_run(Path("outputs/run"), "me/qwen-gsm8k", hub_token())   # skips cleanly without a token
"""

from __future__ import annotations

import os
from pathlib import Path

from kit.errors import KitError

TOKEN_NAME = "HF_TOKEN"


def hub_token() -> str | None:
    """HF_TOKEN from Colab's or Kaggle's secrets, else the environment; None when there is none."""
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
    return os.environ.get(TOKEN_NAME) or None


def push_run(out: Path, repo_id: str, token: str | None) -> str:
    """Upload OUT/merged and OUT/gguf (whichever exist) to one model repo; says what it did or why not."""
    if not repo_id:
        return "hub upload skipped: no repository named (set HUB_REPO, e.g. your-name/qwen-gsm8k-grpo)"
    if not token:
        return f"hub upload skipped: no {TOKEN_NAME} secret (add one with write access to upload)"
    folders = [out / name for name in ("merged", "gguf") if (out / name).is_dir()]
    if not folders:
        raise KitError(f"{out} has neither merged/ nor gguf/: train (and export) before uploading")
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, exist_ok=True)
    for folder in folders:
        api.upload_folder(folder_path=str(folder), repo_id=repo_id,
                          path_in_repo="gguf" if folder.name == "gguf" else "")
    return f"uploaded {', '.join(f.name for f in folders)} to https://huggingface.co/{repo_id}"
