"""Tests split into probes (run in the sandbox) and a verdict over plain values (run here)."""

import ast

import pytest

from kit.sandbox.execute import Outcome, decode, read_probe_values
from kit.sandbox.verdict import UnsupportedTest, split_test

SPLITS = [
    ("assert add(2, 3) == 5", ["add(2, 3)"], "_probe0 == 5"),
    ("assert add(2, 3) == 5, 'adds'", ["add(2, 3)"], "_probe0 == 5"),
    ("assert len(f([1, 2])) == 2", ["f([1, 2])"], "len(_probe0) == 2"),
    ("assert math.isclose(area(2), 12.56, rel_tol=0.01)", ["area(2)"], "math.isclose(_probe0, 12.56, rel_tol=0.01)"),
    ("assert not is_prime(4)", ["is_prime(4)"], "not _probe0"),
    ("assert RESULT == 3", ["RESULT"], "_probe0 == 3"),
    ("assert f(g(1)) == 2", ["f(g(1))"], "_probe0 == 2"),
    ("assert abs(f(1) - 0.5) < 1e-6", ["f(1)"], "abs(_probe0 - 0.5) < 1e-06"),
    ("f(1) == f(2)", ["f(1)", "f(2)"], "_probe0 == _probe1"),
]


@pytest.mark.parametrize("test, probes, check", SPLITS)
def test_only_the_calls_into_the_solution_go_to_the_sandbox(test, probes, check):
    split = split_test(test)
    assert list(split.probes) == probes
    assert ast.unparse(split.check) == check


@pytest.mark.parametrize("test, fragment", [
    ("assert all(f(x) == x for x in range(3))", "f is used with names the test binds itself"),
    ("assert 1 == 1", "does not call the solution"),
    ("x = f(2)\nassert x == 4", "one assert per test"),
    ("assert f(", "not valid Python"),
])
def test_tests_it_cannot_check_outside_are_refused(test, fragment):
    with pytest.raises(UnsupportedTest, match=fragment):
        split_test(test)


def test_the_verdict_compares_plain_values_here():
    split = split_test("assert pair(1) == (1, 2)")
    assert split.passes([(1, 2)])
    assert not split.passes([[1, 2]])  # a list is not the tuple the test expects
    assert not split.passes([RuntimeError("ZeroDivisionError")])


def test_values_come_back_with_their_types():
    assert decode({"type": "tuple", "items": [1, {"type": "set", "items": [2]}]}) == (1, {2})
    assert decode({"type": "dict", "items": [[{"type": "tuple", "items": [1]}, [2]]]}) == {(1,): [2]}
    assert decode({"type": "bytes", "hex": "6869"}) == b"hi"


def test_unreadable_or_missing_results_fail_and_never_pass():
    outcome = Outcome(b'{"value": 5}\nnot json\n{"error": "ValueError: x"}\n', returncode=0)
    values, error = read_probe_values(outcome, 4)
    assert values[0] == 5 and all(isinstance(v, Exception) for v in values[1:])
    assert error is not None
    assert read_probe_values(Outcome(b'{"value": 1}\n', timed_out=True), 1)[1] == "timed out"
