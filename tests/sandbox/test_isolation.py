"""Which isolation level runs model code, and the refusal when the machine offers none."""

import os
from pathlib import Path

import pytest

from kit.sandbox import execute, isolation
from kit.sandbox.execute import active_level
from kit.sandbox.isolation import SandboxUnavailable


def offer(monkeypatch, **works):
    """Pretend only the levels in `works` (True/False) work here."""
    monkeypatch.setattr(execute, "level_works", lambda level: None if works.get(level) else f"{level} is broken")


@pytest.mark.parametrize("euid, first, second", [(1000, "bubblewrap", "namespaces"), (0, "namespaces", "bubblewrap")])
def test_auto_takes_the_first_level_that_works(euid, first, second, monkeypatch):
    """Run by root, bwrap's nobody is host root and the launcher's the real, unprivileged nobody: root prefers it."""
    monkeypatch.delenv(isolation.ENV_VAR, raising=False)
    monkeypatch.setattr(isolation.os, "geteuid", lambda: euid)
    offer(monkeypatch, bubblewrap=True, namespaces=True)
    assert active_level() == first
    offer(monkeypatch, **{first: False, second: True})
    assert active_level() == second


def test_as_root_bubblewrap_gets_device_nodes_of_its_own(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("making device nodes needs root")
    sources = isolation.device_sources(tmp_path)
    assert sorted(sources) == sorted(isolation.DEVICES)
    for device, source in sources.items():
        made, host = os.stat(source), os.stat(device)
        assert Path(source).parent == tmp_path and (made.st_rdev, made.st_mode) == (host.st_rdev, host.st_mode)
    monkeypatch.setattr(isolation.os, "geteuid", lambda: 1000)
    assert isolation.device_sources(tmp_path) == {d: d for d in isolation.DEVICES}  # unprivileged: no mknod


def test_auto_never_falls_back_to_unisolated(monkeypatch):
    monkeypatch.setenv(isolation.ENV_VAR, "auto")
    offer(monkeypatch, unisolated=True)
    with pytest.raises(SandboxUnavailable) as refused:
        active_level()
    message = str(refused.value)
    assert "bubblewrap is broken" in message and "namespaces is broken" in message
    assert "apt install bubblewrap" in message and "code_isolation: unisolated" in message
    assert "read every file your user can (and write them, on a kernel without Landlock)" in message


def test_unisolated_only_when_asked_for_by_name(monkeypatch):
    monkeypatch.setenv(isolation.ENV_VAR, "unisolated")
    offer(monkeypatch, unisolated=True)
    assert active_level() == "unisolated"
    assert "UNISOLATED" in execute.describe_active_level()


@pytest.mark.parametrize("abi, reach", [(3, "can read every file this user can, and write only in its own scratch"),
                                        (0, "can read and write every file this user can")])
def test_unisolated_says_what_the_code_can_write(abi, reach, monkeypatch):
    """With Landlock the code writes only in its own folder; without it, wherever its user can, and says so."""
    monkeypatch.setattr(isolation.confine, "landlock_abi", lambda: abi)
    assert reach in isolation.describe("unisolated")
    assert isolation.describe("bubblewrap") == isolation.DESCRIPTIONS["bubblewrap"]


def test_a_misspelled_level_is_refused(monkeypatch):
    monkeypatch.setenv(isolation.ENV_VAR, "bwrap")
    with pytest.raises(SandboxUnavailable, match="use auto, bubblewrap, namespaces or unisolated"):
        active_level()


def test_the_real_trial_run_reports_why_a_level_fails(monkeypatch):
    monkeypatch.setattr(execute.shutil, "which", lambda name: None)
    execute.level_works.cache_clear()
    try:
        assert "apt install bubblewrap" in execute.level_works("bubblewrap")
    finally:
        execute.level_works.cache_clear()
