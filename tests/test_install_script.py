"""scripts/install.sh (make install) on a machine whose NVIDIA driver is too old for the CUDA 13 builds."""

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO


def fake_nvidia_smi(folder: Path, driver: str) -> None:
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\necho {driver}\n")
    tool.chmod(0o755)


def install(tmp_path: Path, driver: str, **env) -> subprocess.CompletedProcess:
    """The script in a copy of the project, with a stand-in nvidia-smi first on PATH; python3 refuses to run,
    so a script that went past its driver check fails there instead of installing anything."""
    project, tools = tmp_path / "project", tmp_path / "bin"
    (project / "scripts").mkdir(parents=True)
    tools.mkdir()
    shutil.copy(REPO / "scripts" / "install.sh", project / "scripts" / "install.sh")
    shutil.copy(REPO / "pyproject.toml", project / "pyproject.toml")
    fake_nvidia_smi(tools, driver)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "PYTHON": "false", **env}
    return subprocess.run(["bash", "scripts/install.sh"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=60)


def test_an_old_driver_stops_the_install_before_anything_is_downloaded(tmp_path):
    result = install(tmp_path, "535.104.05")
    assert result.returncode == 1
    message = result.stderr
    assert "driver here is 535.104.05" in message and "needs driver 580 or newer" in message, message
    assert "Nothing was installed" in message and "KIT_INSTALL=cpu" in message, message
    assert not (tmp_path / "project" / ".venv").exists()


def test_a_new_driver_goes_on_to_the_install(tmp_path):
    result = install(tmp_path, "580.82.07")
    assert "driver here is" not in result.stderr, result.stderr
    assert result.returncode != 0  # it went on, and stopped at the python3 the test refuses to run


def test_kit_install_cpu_skips_the_driver_check(tmp_path):
    result = install(tmp_path, "535.104.05", KIT_INSTALL="cpu")
    assert "driver here is" not in result.stderr, result.stderr
