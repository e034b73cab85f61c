"""Which isolation level runs model code, and the refusal when the machine offers none."""

import pytest

from kit.sandbox import isolation
from kit.sandbox.isolation import SandboxUnavailable, active_level


def offer(monkeypatch, **works):
    """Pretend only the levels in `works` (True/False) work here."""
    monkeypatch.setattr(isolation, "level_works", lambda level: None if works.get(level) else f"{level} is broken")


def test_auto_prefers_bubblewrap_then_the_kits_namespaces(monkeypatch):
    monkeypatch.delenv(isolation.ENV_VAR, raising=False)
    offer(monkeypatch, bubblewrap=True, namespaces=True)
    assert active_level() == "bubblewrap"
    offer(monkeypatch, bubblewrap=False, namespaces=True)
    assert active_level() == "namespaces"


def test_auto_never_falls_back_to_unisolated(monkeypatch):
    monkeypatch.setenv(isolation.ENV_VAR, "auto")
    offer(monkeypatch, unisolated=True)
    with pytest.raises(SandboxUnavailable) as refused:
        active_level()
    message = str(refused.value)
    assert "bubblewrap is broken" in message and "namespaces is broken" in message
    assert "apt install bubblewrap" in message and "code_isolation: unisolated" in message


def test_unisolated_only_when_asked_for_by_name(monkeypatch):
    monkeypatch.setenv(isolation.ENV_VAR, "unisolated")
    offer(monkeypatch, unisolated=True)
    assert active_level() == "unisolated"
    assert "UNISOLATED" in isolation.describe_active_level()


def test_a_misspelled_level_is_refused(monkeypatch):
    monkeypatch.setenv(isolation.ENV_VAR, "bwrap")
    with pytest.raises(SandboxUnavailable, match="use auto, bubblewrap, namespaces or unisolated"):
        active_level()


def test_the_real_trial_run_reports_why_a_level_fails(monkeypatch):
    monkeypatch.setattr(isolation.shutil, "which", lambda name: None)
    isolation.level_works.cache_clear()
    try:
        assert "apt install bubblewrap" in isolation.level_works("bubblewrap")
    finally:
        isolation.level_works.cache_clear()
