"""The GPU install resolves from PyPI on each Python the kit supports, to the versions pyproject.toml pins.

    pytest tests/test_install_resolves.py    # slow: about a minute; skipped where PyPI cannot be reached

pip works out what `pip install '.[gpu,gguf]'` would install without installing it (`--dry-run --report`), for
Python 3.11 and 3.12 on an x86-64 Linux with glibc 2.35 (Ubuntu 22.04, Colab's image): wheels only
(`--only-binary=:all:`, which pip requires for a Python or platform other than its own), and their metadata
only (PEP 658 files, or HTTP range reads where an index serves none), so no large wheel is downloaded.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
ASKED = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["gpu"] + PROJECT["optional-dependencies"]["gguf"]
PYTHONS = ["3.11", "3.12"]
CHECKED = ["torch", "vllm", "unsloth", "unsloth-zoo", "trl", "transformers"]  # DESIGN.md's stack, as pinned together
# PyTorch's pairing (github.com/pytorch/vision#installation): each torchvision minor release goes with one torch's.
TORCHVISION_FOR_TORCH = {"2.13": "0.28", "2.14": "0.29"}
# glibc 2.35 takes every manylinux tag from 2_35 down (pip expands none of them by itself); the gpu extra needs
# 2.31 or newer: torch's and vLLM's wheels are manylinux_2_28, vLLM's llguidance 1.7 manylinux_2_31.
PLATFORMS = ([f"manylinux_2_{minor}_x86_64" for minor in range(35, 4, -1)]
             + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"])
# Published as an sdist only, so a wheels-only resolution cannot take it: its own requirements stand in for it.
SDIST_ONLY = "llama-cpp-python"
# pip settings that reach the index stay; every other one (config files, PIP_FIND_LINKS, PIP_CONSTRAINT) is this
# machine's, not a user's: this one's /etc/xdg/pip caps torch at 2.14.1 and its PIP_FIND_LINKS offers a CPU torch.
REACH_THE_INDEX = {"PIP_INDEX_URL", "PIP_CERT", "PIP_CLIENT_CERT", "PIP_PROXY", "PIP_TRUSTED_HOST",
                   "PIP_DEFAULT_TIMEOUT"}


def pip_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_") or key in REACH_THE_INDEX}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def stand_in_for_sdist(line: str) -> list[str]:
    """The requirements llama-cpp-python declares (with the extras asked for), read from the copy `make install`
    built. None of them depends on the Python version, so they stand in for it on every Python alike."""
    asked = Requirement(line)
    built = importlib.metadata.version(asked.name)
    assert Version(built) in asked.specifier, f"the installed {asked.name} {built} is outside {line}: make install"
    declared = [Requirement(item) for item in importlib.metadata.requires(asked.name) or []]
    on_python = [str(req) for req in declared if req.marker and "python_" in str(req.marker)]
    assert not on_python, f"{asked.name}'s requirements depend on the Python version: {on_python}"
    wanted = [req for req in declared if req.marker is None
              or any(req.marker.evaluate({"extra": extra}) for extra in asked.extras or {""})]
    for req in wanted:
        req.marker = None  # read above, for the extras asked
    return [str(req) for req in wanted]


def requirements() -> list[str]:
    """`.[gpu,gguf]` as a list pip takes with --only-binary (the project itself is no wheel)."""
    lines = []
    for line in ASKED:
        is_sdist = canonicalize_name(Requirement(line).name) == SDIST_ONLY
        lines += stand_in_for_sdist(line) if is_sdist else [line]
    return lines


def pip_as(python: str) -> list[str]:
    """pip, run by a Python `python` where this machine has one, so that environment markers are read as that
    Python reads them too (vLLM asks for setuptools<81 only on 3.12+); else by this one, whose --python-version
    then decides wheels and Requires-Python, while markers are read as this Python's."""
    pip = [sys.executable, "-m", "pip"]
    other = shutil.which(f"python{python}")
    if python == f"{sys.version_info.major}.{sys.version_info.minor}" or other is None:
        return pip
    says = subprocess.run([other, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, timeout=60).stdout.strip()
    return [*pip, "--python", other] if says == python else pip  # a pyenv shim names versions it will not run


@pytest.fixture(scope="module")
def resolved(tmp_path_factory) -> dict[str, tuple[dict, float]]:
    """Python version -> (pip's report, seconds): both resolutions at once, as each is mostly waiting on the index."""
    folder, env = tmp_path_factory.mktemp("resolve"), pip_env()
    probe = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--timeout", "10",
                            "--retries", "0", "--dest", str(folder), "six==1.16.0"],
                           capture_output=True, text=True, env=env, timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"the package index cannot be reached (pip download six==1.16.0: "
                    f"{(probe.stderr.strip().splitlines() or ['no message'])[-1]})")
    (folder / "requirements.txt").write_text("\n".join(requirements()) + "\n")
    started, runs = time.monotonic(), {}
    for python in PYTHONS:
        command = [*pip_as(python), "install", "--dry-run", "--quiet", "--ignore-installed",
                   "--report", str(folder / f"{python}.json"), "--python-version", python, "--only-binary=:all:",
                   *(f"--platform={tag}" for tag in PLATFORMS),
                   # metadata by HTTP range reads where the index serves no PEP 658 file (pip prefers that file)
                   "--use-feature=fast-deps", "-r", str(folder / "requirements.txt")]
        runs[python] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    finished = {python: (run.communicate(timeout=540)[1], time.monotonic() - started) for python, run in runs.items()}
    reports = {}
    for python, run in runs.items():
        message, seconds = finished[python]
        assert run.returncode == 0, f"pip cannot resolve .[gpu,gguf] for Python {python}:\n{message[-3000:]}"
        reports[python] = json.loads((folder / f"{python}.json").read_text()), seconds
        print(f"Python {python}: resolved in {seconds:.0f} s, markers read as Python "
              f"{reports[python][0]['environment']['python_version']}")
    return reports


def versions(report: dict) -> dict[str, Version]:
    return {canonicalize_name(item["metadata"]["name"]): Version(item["metadata"]["version"])
            for item in report["install"]}


def asked_of(name: str) -> SpecifierSet:
    """Everything pyproject.toml asks of `name` across the dependencies and the two extras, together."""
    found = [Requirement(line).specifier for line in ASKED if canonicalize_name(Requirement(line).name) == name]
    assert found, f"pyproject.toml asks nothing of {name}"
    return SpecifierSet(",".join(str(spec) for spec in found))


def test_requires_python_starts_at_the_oldest_python_resolved():
    admits, oldest = SpecifierSet(PROJECT["requires-python"]), Version(min(PYTHONS, key=Version))
    below = f"{oldest.major}.{oldest.minor - 1}"
    assert str(oldest) in admits and below not in admits, (
        f"requires-python {admits}, while the install is resolved for {PYTHONS} (TRL 1.15.0 needs 3.11)")


@pytest.mark.slow
@pytest.mark.parametrize("python", PYTHONS)
def test_the_gpu_install_resolves_to_the_pins(resolved, python):
    got = versions(resolved[python][0])
    for name in CHECKED:
        assert name in got, f"{name} is not in the install pip resolved for Python {python}"
        assert got[name] in asked_of(name), f"{name} {got[name]} on Python {python}; pyproject.toml: {asked_of(name)}"


@pytest.mark.slow
@pytest.mark.parametrize("python", PYTHONS)
def test_torchvision_matches_torch(resolved, python):
    got = versions(resolved[python][0])
    torch, torchvision = got["torch"], got["torchvision"]
    paired = TORCHVISION_FOR_TORCH.get(f"{torch.major}.{torch.minor}")
    assert paired, f"torch {torch}: add the torchvision release that goes with it to TORCHVISION_FOR_TORCH"
    assert f"{torchvision.major}.{torchvision.minor}" == paired, (
        f"torchvision {torchvision} beside torch {torch} on Python {python}: torch {torch.major}.{torch.minor} "
        f"goes with torchvision {paired}")
