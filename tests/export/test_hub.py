import pytest

from kit.errors import KitError
from kit.export.hub import hub_token, push_run


def test_without_a_repo_or_a_token_the_upload_is_skipped_and_says_why(tmp_path):
    assert "no repository named" in push_run(tmp_path, "", "token")
    assert "no HF_TOKEN secret" in push_run(tmp_path, "me/model", None)


def test_a_run_without_models_is_refused_before_touching_the_hub(tmp_path):
    with pytest.raises(KitError, match="neither merged/ nor gguf/"):
        push_run(tmp_path, "me/model", "token")


def test_token_comes_from_the_environment_off_colab_and_kaggle(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "abc")
    assert hub_token() == "abc"
    monkeypatch.delenv("HF_TOKEN")
    assert hub_token() is None
