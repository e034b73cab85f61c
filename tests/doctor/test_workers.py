"""kit.doctor.workers: the figures and verdicts the checks share."""

import pytest

from kit.doctor.processes import FAIL, PASS
from kit.doctor.workers import adapter_verdict, forget_cached_prompts, steady_seconds


def test_steady_seconds_leaves_out_the_warm_up_step():
    assert steady_seconds([9.0, 1.0, 3.0]) == 2.0
    assert steady_seconds([4.0]) == 4.0

def test_adapter_verdict_needs_a_difference_and_a_repeatable_base():
    base = [[1, 2, 3], [4, 5, 6]]
    assert adapter_verdict([[1, 2, 3], [4, 5, 7]], base, base)["status"] == PASS
    same = adapter_verdict(base, base, base)
    assert same["status"] == FAIL and "changed nothing" in same["reason"]
    shaky = adapter_verdict([[9, 9, 9], [4, 5, 6]], base, [[1, 2, 3], [4, 5, 0]])
    assert shaky["status"] == FAIL and "not repeatable" in shaky["reason"]


def test_a_prefix_cache_vllm_cannot_empty_stops_the_comparison():
    """vLLM answers False while a request still holds cached blocks: the next draw would not be computed afresh."""
    busy = type("BusyLLM", (), {"reset_prefix_cache": lambda self: False})()
    with pytest.raises(RuntimeError, match="kept its prefix cache"):
        forget_cached_prompts(busy)
