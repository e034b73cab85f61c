"""kit/compile_cache.py: torch.compile's disk cache, one folder per CPU feature set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit import compile_cache
from tests.conftest import REPO

AVX2_FLAGS = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
AVX512_FLAGS = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw avx512vl avx512dq\n"


def test_each_feature_set_gets_a_folder_of_its_own_and_the_same_one_every_time():
    avx2, avx512 = (compile_cache.folder_name(flags, "x86_64") for flags in (AVX2_FLAGS, AVX512_FLAGS))
    assert avx2 != avx512
    assert avx2 == compile_cache.folder_name(AVX2_FLAGS.replace("avx avx2", "avx2 avx"), "x86_64")  # order
    assert avx2.startswith("x86_64-")
    assert compile_cache.folder_name(AVX512_FLAGS, "x86_64", "avx2") != avx512  # inductor picks AVX2 there


def test_arm_features_count_as_flags():
    assert compile_cache.cpu_features("Features\t: fp asimd sve\n") == "asimd fp sve"


def test_a_folder_the_user_chose_is_left_alone():
    environ = {compile_cache.CACHE_ENV: "/data/my-cache"}
    assert compile_cache.separate_per_cpu(environ) is None
    assert environ == {compile_cache.CACHE_ENV: "/data/my-cache"}


def test_torchs_own_default_written_back_is_not_taken_for_a_choice():
    environ = {compile_cache.CACHE_ENV: str(compile_cache.default_root())}
    assert compile_cache.separate_per_cpu(environ) == environ[compile_cache.CACHE_ENV]
    assert Path(environ[compile_cache.CACHE_ENV]).parent == compile_cache.default_root()


def test_importing_the_kit_points_inductor_at_this_cpus_folder():
    code = ("import kit, os\nfrom torch._inductor.runtime.cache_dir_utils import cache_dir\n"
            "print(os.environ['TORCHINDUCTOR_CACHE_DIR'] == cache_dir())\nprint(cache_dir())")
    same, folder = run_python(code, timeout=120).split()
    assert same == "True"
    assert Path(folder).parent == compile_cache.default_root()


def run_python(code: str, timeout: int = 300, dropped: tuple[str, ...] = (), **extra: str) -> str:
    """`python -c code` in the repository, without TORCHINDUCTOR_CACHE_DIR (nor `dropped`), with `extra` set: what
    it printed."""
    env = {k: v for k, v in os.environ.items() if k not in (compile_cache.CACHE_ENV, *dropped)} | extra
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


# Imports the kit's loader (Unsloth's import drops the setting, the loader sets it again), compiles a function
# whose rows end in a partial vector, then reports the vector widths of the kernels in the
# cache folder this process used: what it ran, built here or loaded from an earlier process.
COMPILE = """
import kit.models.loader, json, os, re, torch
from pathlib import Path
fn = torch.compile(lambda x: (x * 2 + 1).sum(dim=1), dynamic=True)
fn(torch.randn(5, 37))
steps = set()
for source in Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]).rglob("*.cpp"):
    steps |= {int(n) for n in re.findall(r"x\\d\\+=static_cast<int64_t>\\((\\d+)L\\)", source.read_text())}
print(json.dumps(sorted(steps)))
"""


def vector_steps(tmp_path: Path, **extra: str) -> list[int]:
    # inductor's default folder under this test's own temp folder
    printed = run_python(COMPILE, dropped=("ATEN_CPU_CAPABILITY",), TMPDIR=str(tmp_path), **extra)
    return json.loads(printed.strip().splitlines()[-1])


@pytest.mark.slow  # two processes import Unsloth and compile: ~50 s
def test_a_graph_compiled_for_avx2_is_never_run_where_avx512_is_picked(tmp_path):
    """The CI abort: inductor's cache key leaves out the vector instructions, so without a folder per feature
    set the second process runs the first one's 8-wide loops over its own 16-wide vectors. ATEN_CPU_CAPABILITY
    makes the first process pick AVX2 here, as an AVX2 machine would."""
    import torch

    vector_steps(tmp_path, ATEN_CPU_CAPABILITY="avx2")
    native = vector_steps(tmp_path)
    width = 16 if torch.cpu._is_avx512_supported() else 8
    assert native and set(native) <= {1, width}, native


def test_a_folder_the_user_chose_outlives_the_setting_being_dropped(tmp_path):
    code = ("import os\nfrom kit import compile_cache\nfrom torch._inductor.runtime.cache_dir_utils import cache_dir\n"
            "compile_cache.hold_torch_to_it()\nos.environ.pop('TORCHINDUCTOR_CACHE_DIR')  # as Unsloth does\n"
            "print(cache_dir())")
    assert run_python(code, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "mine")).split() == [str(tmp_path / "mine")]


@pytest.mark.slow  # imports Unsloth: ~30 s
def test_unsloths_later_imports_leave_inductor_in_this_cpus_folder():
    """The second CI abort: Unsloth drops the setting when its model modules are first imported, and on a CPU
    `unsloth.models.vision` is first imported long after `import unsloth` (by the vision loader's checks, or a
    test), after which torch fell back to the folder every CPU shares."""
    code = ("import os\nimport kit.models.loader\nfrom kit.config import ModelConfig\n"
            "from kit.models import vision_loader\n"
            "vision_loader.vllm_refusal(ModelConfig(name='kit:tiny-vision', fast_inference=True))\n"
            "from torch._inductor.runtime.cache_dir_utils import cache_dir\n"
            "print(cache_dir(), os.environ['TORCHINDUCTOR_CACHE_DIR'])")
    used, setting = run_python(code).split()[-2:]
    assert used == setting == compile_cache.this_cpus_folder("")
