"""Both notebooks run top to bottom on this CPU in the smoke profile, and are stored exactly as built,
without outputs."""

from __future__ import annotations

import json

import nbformat
import pytest

from tests.conftest import REPO
from tests.e2e.cli import HANG_GUARD_S

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_there_are_colab_and_kaggle_notebooks():
    assert {p.name for p in NOTEBOOKS} == {"gsm8k_grpo_colab.ipynb", "gsm8k_grpo_kaggle.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_as_built_and_without_outputs(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("build", REPO / "notebooks" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    stored = json.loads(path.read_text())
    for cell in stored["cells"]:
        if cell["cell_type"] == "code":
            assert not cell["outputs"] and cell["execution_count"] is None, \
                f"{path.name} holds outputs: clear them, or rebuild with notebooks/build.py"
    platform = path.stem.removeprefix("gsm8k_grpo_")
    assert path.read_text() == nbformat.writes(build.build(platform)) + "\n", \
        f"{path.name} differs from notebooks/build.py: run .venv/bin/python notebooks/build.py"


def smoke_parameters(out) -> str:
    return (f'PROFILE = "smoke"\nMODEL = ""\nCONFIG = ""\nSTEPS = 0\nNPROC = 1\nOUT = "{out}"\nQUANT = "q8_0"\n'
            f'HUB_REPO = ""\nINSTALL = False\nKIT_DIR = "{REPO}"')


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom_in_the_smoke_profile(path, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    parameters = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    parameters.source = smoke_parameters(tmp_path / "run")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    NotebookClient(notebook, timeout=HANG_GUARD_S, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO)}}).execute()
    text = "\n".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    assert "verdict: fits" in text, "the plan cell printed no verdict"
    assert "verdict: no GPU here" in text and "NVIDIA driver: none" in text, "the driver and doctor cells said nothing"
    assert (tmp_path / "run" / "merged").is_dir() and list((tmp_path / "run" / "gguf").glob("*.Q8_0.gguf"))
    assert "hub upload skipped" in text
    images = [o for c in notebook.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, "the plots were not shown inline"


@pytest.mark.slow
def test_a_failed_training_cell_stops_run_all(tmp_path):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    parameters = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    out = tmp_path / "used"
    (out / "old").mkdir(parents=True)  # kit train refuses a folder that already holds something
    parameters.source = smoke_parameters(out)
    client = NotebookClient(notebook, timeout=HANG_GUARD_S, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO)}})
    with pytest.raises(CellExecutionError, match="training failed \\(exit code 2\\)"):
        client.execute()


@pytest.mark.slow
def test_a_failed_install_stops_run_all(tmp_path):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    parameters = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    not_a_project = tmp_path / "kit"  # exists, so nothing is cloned; pip refuses a folder without a project
    not_a_project.mkdir()
    parameters.source = smoke_parameters(tmp_path / "run").replace("INSTALL = False", "INSTALL = True").replace(
        f'KIT_DIR = "{REPO}"', f'KIT_DIR = "{not_a_project}"')
    client = NotebookClient(notebook, timeout=HANG_GUARD_S, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO)}})
    with pytest.raises(CellExecutionError, match="the install failed \\(exit code 1\\)"):
        client.execute()
    assert not (tmp_path / "run").exists(), "cells after the install ran"
