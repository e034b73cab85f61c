"""scripts/install.sh (make install) where it must stop before installing anything: an NVIDIA driver too old for
the CUDA 13 builds, or a Python older than the 3.11 TRL 1.15.0 needs."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import REPO


def fake_nvidia_smi(folder: Path, driver: str) -> None:
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\necho {driver}\n")
    tool.chmod(0o755)


def install(tmp_path: Path, driver: str = "580.82.07", **env) -> subprocess.CompletedProcess:
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


def fake_python(path: Path, version: str) -> Path:
    """A python3 that says it is `version`: it runs `-c CODE` with sys.version_info and sys.version saying so, and
    refuses everything else (-m venv, -m pip), writing what it was asked into asked.log beside it."""
    major, minor, micro = map(int, version.split("."))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import collections, sys
        if sys.argv[1:2] == ["-c"]:
            sys.version_info = collections.namedtuple("version_info", "major minor micro releaselevel serial")(
                {major}, {minor}, {micro}, "final", 0)
            sys.version = "{version} (a stand-in)"
            exec(sys.argv[2])
        with open({str(path.parent / "asked.log")!r}, "a") as log:
            log.write(" ".join(sys.argv[1:]) + "\\n")
        sys.exit(3)
        """))
    path.chmod(0o755)
    return path


def test_python_3_10_stops_the_install_with_one_line_before_a_venv_is_made(tmp_path):
    python = fake_python(tmp_path / "py310" / "python3", "3.10.13")
    result = install(tmp_path, PYTHON=str(python))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"one line, not: {result.stderr}"
    message = lines[0]
    assert "needs Python 3.11 or newer" in message and "is Python 3.10.13" in message, result.stderr
    assert "PYTHON=python3.11 make install" in message and "Nothing was installed" in message, message
    assert not (tmp_path / "project" / ".venv").exists()
    assert not (python.parent / "asked.log").exists(), "install.sh asked the old Python for more than its version"


def test_a_venv_made_with_python_3_10_is_checked_not_python3(tmp_path):
    """An existing .venv is reused, so its Python is the one that must be new enough, whatever PYTHON says."""
    old = fake_python(tmp_path / "project" / ".venv" / "bin" / "python", "3.10.13")
    result = install(tmp_path, PYTHON=str(fake_python(tmp_path / "py312" / "python3", "3.12.1")))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"one line, not: {result.stderr}"
    message = lines[0]
    assert ".venv was made with Python 3.10.13" in message and "rm -r .venv" in message, result.stderr
    assert not (old.parent / "asked.log").exists(), "install.sh went on to use the old .venv"


def test_python_3_11_goes_on_to_make_the_venv(tmp_path):
    python = fake_python(tmp_path / "py311" / "python3", "3.11.7")
    result = install(tmp_path, PYTHON=str(python))
    assert "needs Python" not in result.stderr, result.stderr
    # it went on, and stopped where the stand-in refuses to make the venv
    assert (python.parent / "asked.log").read_text() == "-m venv .venv\n"
