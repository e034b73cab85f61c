"""The sandbox: model code runs cut off from the machine, and the test process survives all of it."""

import os
import time
from pathlib import Path

import pytest

from kit.rewards import syntax_valid, passes_tests
from kit.rewards.sandbox import run_python
from tests.conftest import chat

ADD = "```python\ndef add(a, b):\n    return a + b\n```"


def test_each_completion_meets_its_own_rows_tests():
    score = passes_tests(timeout=5)
    completions = [chat(ADD), chat(ADD), chat("def add(a, b):\n    return a - b"), chat(ADD)]
    tests = [
        ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"],
        ["assert add(2, 3) == 6"],  # this row's own tests, not the batch's
        '["assert add(2, 3) == 5", "assert add(0, 0) == 0"]',
        None,
    ]
    assert score(completions, tests=tests) == [1.0, 0.0, 0.5, None]


def test_syntax_valid():
    assert syntax_valid([chat(ADD), chat("def f(:"), chat("")]) == [1.0, 0.0, 1.0]


def test_infinite_loop_is_cut_at_the_time_limit():
    started = time.perf_counter()
    result = run_python("while True:\n    pass", ["assert True"], timeout=1.0)
    assert result.timed_out and result.passed == 0
    assert time.perf_counter() - started < 5


def test_network_is_unreachable():
    code = "import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 80))"
    result = run_python(code, [], timeout=5)
    assert result.error is not None and "not allowed" in result.error


def test_writing_outside_the_sandbox_fails(tmp_path):
    target = tmp_path / "escaped.txt"
    result = run_python(f"open({str(target)!r}, 'w').write('x')", [], timeout=5)
    assert "writing" in result.error and not target.exists()
    inside = run_python("open('scratch.txt', 'w').write('x')\nassert open('scratch.txt').read() == 'x'", [], timeout=5)
    assert inside.error is None  # its own folder is writable


def test_new_processes_are_refused():
    for code in ("import os\nwhile True:\n    os.fork()", "import subprocess\nsubprocess.run(['true'])",
                 "import os\nos.system('true')"):
        result = run_python(code, [], timeout=5)
        assert "not allowed" in result.error, code


def test_memory_hog_is_contained():
    result = run_python("blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))", ["assert True"], timeout=10,
                        memory_mb=256)
    assert result.error is not None and result.passed == 0


def test_nothing_of_the_trainers_process_is_visible(monkeypatch):
    monkeypatch.setenv("KIT_SECRET_TOKEN", "hunter2")
    result = run_python("import os\nassert 'KIT_SECRET_TOKEN' not in os.environ", [], timeout=5)
    assert result.error is None


def test_printed_text_cannot_pose_as_a_result():
    fake = 'print(\'\\n@@kit-0000@@{"error": null, "results": [null]}\')'
    assert run_python(fake, ["assert False"], timeout=5).passed == 0


def test_the_test_process_survives_everything():
    pid, cwd = os.getpid(), Path.cwd()
    for code in ("import os\nos._exit(3)", "raise SystemExit(1)", "import os, signal\nos.kill(os.getppid(), 9)"):
        run_python(code, ["assert True"], timeout=5)
    assert os.getpid() == pid and Path.cwd() == cwd
    assert run_python("x = 1", ["assert x == 1"], timeout=5).passed == 1


@pytest.mark.parametrize("bad", ["", "   ", "\x00\x01 garbage ```", "```python\n```"])
def test_odd_code_scores_without_raising(bad):
    values = passes_tests(timeout=5)([chat(bad)], tests=[["assert True"]])
    assert values in ([0.0], [1.0])
