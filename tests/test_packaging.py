"""A user's install, `pip install .` (not editable) into a fresh virtualenv: the shipped recipes come along by name
inside the kit (recipes/ at the repository's top is kit/recipes in the package), and nothing named `recipes` is
installed. The fresh environment borrows this one's dependencies (torch, Unsloth, TRL) through a .pth file rather
than download gigabytes; the kit itself is only the wheel's copy."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


def pip(*args: str, cwd: Path = REPO) -> None:
    result = subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtualenv with the kit's wheel installed, its dependencies this environment's."""
    root = tmp_path_factory.mktemp("install")
    pip("wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(root / "wheel"), str(REPO))
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300)
    fresh = venv_python(root)
    site = subprocess.run([fresh, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], check=True,
                          capture_output=True, text=True).stdout.strip()
    (Path(site) / "borrowed.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    result = subprocess.run([fresh, "-m", "pip", "install", "--quiet", "--no-deps",
                             str(next((root / "wheel").glob("*.whl")))], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return root


def venv_python(root: Path) -> str:
    return str(root / "venv" / "bin" / "python")


def run_from_elsewhere(installed: Path, *args: str) -> subprocess.CompletedProcess:
    """The fresh virtualenv's python, in a folder outside the repository, with nothing of the checkout on its path."""
    elsewhere = installed / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([venv_python(installed), *args], cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=1800)


@pytest.mark.slow  # builds a wheel, then a smoke run from it: ~1 minute
def test_the_wheel_carries_every_shipped_recipe_inside_the_kit_and_no_recipes_package(installed):
    names = zipfile.ZipFile(next((installed / "wheel").glob("*.whl"))).namelist()
    shipped = sorted(p.name for p in (REPO / "recipes").glob("*.py"))
    assert sorted(n.removeprefix("kit/recipes/") for n in names if n.startswith("kit/recipes/")) == shipped
    assert not [n for n in names if n.startswith("recipes/")]
    found = run_from_elsewhere(installed, "-c", "import kit, kit.recipes; print(kit.__file__); "
                               "print(kit.recipes.known_recipes()); import importlib.util; "
                               "print(importlib.util.find_spec('recipes'))")
    assert found.returncode == 0, found.stderr[-2000:]
    where, recipes, top_level = found.stdout.strip().splitlines()[-3:]
    assert where.startswith(str(installed / "venv"))  # the wheel's copy, not the checkout
    assert recipes == repr(sorted(p.removesuffix(".py") for p in shipped if p != "__init__.py"))
    assert top_level == "None"


@pytest.mark.slow
def test_the_installed_kit_trains_a_shipped_recipe_by_name_from_another_folder(installed):
    kit = str(installed / "venv" / "bin" / "kit")  # the console script the wheel installs
    run = run_from_elsewhere(installed, kit, "train", "gsm8k", "--profile", "smoke", "--out", "run", "eval.n=2")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "done in" in run.stdout
