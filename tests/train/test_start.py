"""`kit train`'s order of steps: nothing heavy before the checks, then Unsloth before TRL and transformers."""

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

# Records, for the first import of each library, whether Unsloth's own import is what brought it in.
WATCH = """
import json, sys, traceback
FIRST = {}
class Watch:
    def find_spec(self, name, path, target=None):
        if name in ("trl", "transformers", "peft", "unsloth") and name not in FIRST:
            FIRST[name] = any(f.filename.endswith("unsloth/__init__.py") for f in traceback.extract_stack())
sys.meta_path.insert(0, Watch())
"""


def first_imports(code: str) -> dict:
    result = subprocess.run([sys.executable, "-c", WATCH + code + "\nprint('FIRST ' + json.dumps(FIRST))"],
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("FIRST ")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("FIRST "))


@pytest.mark.slow  # two processes that import Unsloth
def test_kit_train_imports_nothing_heavy_before_its_checks_then_unsloth_first():
    seen = first_imports("import kit.train.start, kit.cli\nBEFORE = dict(FIRST)\n"
                         "from kit.models import import_unsloth_first\nimport_unsloth_first()\nimport kit.train.run\n"
                         "assert BEFORE == {}, BEFORE")
    assert seen == {"unsloth": False, "transformers": True, "trl": True, "peft": True}


@pytest.mark.slow
def test_a_tool_recipe_is_loaded_before_unsloth_and_its_tools_checked_after():
    """The tools' schemas come from transformers (get_json_schema): loading python_tool imported it before
    Unsloth, which warns on a GPU that its patches may not apply."""
    seen = first_imports("from kit.recipes import load_recipe\nrecipe = load_recipe('python_tool', check_tools=False)\n"
                         "assert FIRST == {}, FIRST\nfrom kit.models import import_unsloth_first\n"
                         "import_unsloth_first()\nrecipe.toolbox.check()")
    assert seen == {"unsloth": False, "transformers": True, "trl": True, "peft": True}


@pytest.mark.slow
def test_a_training_module_imported_on_its_own_still_brings_unsloth_in_first():
    """Tests and benchmarks import the stages directly; their own imports keep the order."""
    seen = first_imports("import kit.train.stages.grpo")
    assert seen == {"unsloth": False, "transformers": True, "trl": True, "peft": True}


@pytest.mark.parametrize("answer, refused", [("Tesla P100-PCIE-16GB, 6.0", True), ("Tesla T4, 7.5", False)])
def test_the_gpu_is_checked_without_starting_cuda_before_unsloths_import(monkeypatch, answer, refused):
    """Unsloth's import sets PYTORCH_ALLOC_CONF=expandable_segments:True, which only an allocator built after it
    sees; torch builds its allocator at its first CUDA call (torch.cuda._lazy_init). So the check before that
    import reads the GPU from nvidia-smi, and must not start CUDA."""
    from types import SimpleNamespace

    import torch

    from kit import env
    from kit.errors import KitError
    from kit.train.start import check_the_gpu

    started = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "_lazy_init", lambda: started.append("torch.cuda._lazy_init"))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: started.append("capability"))
    monkeypatch.setattr(env.subprocess, "run", lambda command, **kwargs: SimpleNamespace(
        returncode=0, stdout=("580.82.07" if "--query-gpu=driver_version" in command else answer) + "\n"))
    env.has_gpu.cache_clear()
    try:
        if refused:
            with pytest.raises(KitError, match=r"Tesla P100-PCIE-16GB has compute capability 6.0.*Nothing was loaded"):
                check_the_gpu()
        else:
            check_the_gpu()
    finally:
        env.has_gpu.cache_clear()
    assert started == [], f"CUDA was started before Unsloth's import: {started}"
