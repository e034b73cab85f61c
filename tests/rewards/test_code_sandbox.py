"""Code rewards: each completion is checked against its own row's tests, in the sandbox (tests/sandbox)."""

import pytest

from kit.errors import KitError
from kit.rewards import passes_tests, syntax_valid
from kit.rewards.code import prepare_code_rewards
from kit.sandbox import execute, isolation
from tests.conftest import chat

ADD = "```python\ndef add(a, b):\n    return a + b\n```"
ECHO_SUM = "import sys\nprint(sum(int(t) for t in sys.stdin.read().split()))"


@pytest.fixture(autouse=True)
def any_working_level(monkeypatch):
    monkeypatch.setenv(isolation.ENV_VAR, "auto")  # restored after each test, whatever the code under test sets
    try:
        execute.active_level()
    except KitError:
        monkeypatch.setenv(isolation.ENV_VAR, "unisolated")  # these tests check scoring, not isolation


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


def test_stdin_stdout_tests_compare_the_output_outside():
    score = passes_tests(timeout=5)
    tests = [[{"input": "2 3", "output": "5"}, {"input": "1 1\n", "output": "2\n"}, {"input": "1", "output": "9"}]]
    assert score([chat(ECHO_SUM)], tests=tests) == [pytest.approx(2 / 3)]
    assert score([chat("print(5)\nraise SystemExit(1)")], tests=[[{"input": "2 3", "output": "5"}]]) == [0.0]


def test_syntax_valid():
    assert syntax_valid([chat(ADD), chat("def f(:"), chat("")]) == [1.0, 0.0, 1.0]


def test_the_run_checks_every_rows_tests_before_training():
    score = passes_tests()
    rows = [{"tests": ["assert add(1, 2) == 3"]}, {"tests": ["assert all(add(x, 0) == x for x in range(3))"]}]
    with pytest.raises(KitError, match=r"data row 1, column 'tests': .*write one assert per case"):
        prepare_code_rewards(execute.requested_level(), [score], rows)
    with pytest.raises(KitError, match="data row 0: a stdin/stdout test needs the keys 'input' and 'output'"):
        prepare_code_rewards(execute.requested_level(), [score], [{"tests": [{"stdin": "1"}]}])


def test_runs_without_code_rewards_never_touch_the_sandbox(monkeypatch):
    monkeypatch.setattr(execute, "active_level", lambda: pytest.fail("the sandbox was consulted"))
    assert prepare_code_rewards("auto", [syntax_valid], [{"tests": "anything"}]) is None


def test_no_isolation_means_no_code_rewards_unless_asked_for_by_name(monkeypatch):
    monkeypatch.setattr(execute, "level_works", lambda level: f"{level} missing")
    with pytest.raises(KitError, match="no operating-system isolation works here"):
        prepare_code_rewards("auto", [passes_tests()], [])
    monkeypatch.setattr(execute, "level_works", lambda level: None)
    assert "UNISOLATED" in prepare_code_rewards("unisolated", [passes_tests()], [])
