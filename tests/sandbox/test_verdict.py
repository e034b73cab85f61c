"""Tests split into probes (run in the sandbox) and a verdict over plain values (run here)."""

import json

import pytest

from kit.sandbox.execute import judge
from kit.sandbox.judge import decode
from kit.sandbox.verdict import UnsupportedTest, split_test

SPLITS = [
    ("assert add(2, 3) == 5", ["add(2, 3)"], "_probe0 == 5"),
    ("assert add(2, 3) == 5, 'adds'", ["add(2, 3)"], "_probe0 == 5"),
    ("assert len(f([1, 2])) == 2", ["f([1, 2])"], "len(_probe0) == 2"),
    ("assert math.isclose(area(2), 12.56, rel_tol=0.01)", ["area(2)"], "math.isclose(_probe0, 12.56, rel_tol=0.01)"),
    ("assert not is_prime(4)", ["is_prime(4)"], "not _probe0"),
    ("assert RESULT == 3", ["RESULT"], "_probe0 == 3"),
    ("assert abs(f(1) - 0.5) < 1e-6", ["f(1)"], "abs(_probe0 - 0.5) < 1e-06"),
    ("f(1) == f(2)", ["f(1)", "f(2)"], "_probe0 == _probe1"),
    ("assert solve(3) == pow(3, 1000, 7)", ["solve(3)"], "_probe0 == pow(3, 1000, 7)"),
    ("assert str.upper(solve(1)) == 'A'", ["solve(1)"], "str.upper(_probe0) == 'A'"),
]


@pytest.mark.parametrize("test, probes, check", SPLITS)
def test_only_the_calls_into_the_solution_go_to_the_sandbox(test, probes, check):
    split = split_test(test)
    assert list(split.probes) == probes
    assert split.check == check


@pytest.mark.parametrize("test, fragment", [
    ("assert all(f(x) == x for x in range(3))", "f is used with names the test binds itself"),
    ("assert 1 == 1", "does not call the solution"),
    ("x = f(2)\nassert x == 4", "is not one `assert` or expression"),
    ("assert f(g(1)) == 2", "calls f and g"),
    ("assert f(", "not valid Python"),
    ("assert isclose(solve(3), 9.0)", "calls isclose and solve"),  # the model's code could define isclose
    ("assert solve(3) == EXPECTED", "calls EXPECTED and solve"),
    ("assert math.foo(solve(3))", "uses math.foo"),
])
def test_tests_it_cannot_check_outside_are_refused(test, fragment):
    with pytest.raises(UnsupportedTest, match=fragment):
        split_test(test)


def lines(*values) -> list[str]:
    return [json.dumps(v) for v in values]


def test_the_judge_compares_plain_values():
    split = split_test("assert pair(1) == (1, 2)")
    assert judge([split], lines({"value": {"type": "tuple", "items": [1, 2]}}))["passed"] == [True]
    assert judge([split], lines({"value": [1, 2]}))["passed"] == [False]  # a list is not the tuple expected
    failed = judge([split], lines({"error": "ZeroDivisionError: division by zero"}))
    assert failed == {"passed": [False], "error": "ZeroDivisionError: division by zero"}


def test_values_come_back_with_their_types():
    assert decode({"type": "tuple", "items": [1, {"type": "set", "items": [2]}]}) == (1, {2})
    assert decode({"type": "dict", "items": [[{"type": "tuple", "items": [1]}, [2]]]}) == {(1,): [2]}
    assert decode({"type": "bytes", "hex": "6869"}) == b"hi"


def test_unreadable_or_missing_results_fail_and_never_pass():
    splits = [split_test("assert f(1) == 5"), split_test("assert f(2) == 5"), split_test("assert f(3) == 5")]
    verdict = judge(splits, ['{"value": 5}', "not json"])
    assert verdict["passed"] == [True, False, False] and "unreadable" in verdict["error"]


def test_a_check_that_would_stall_or_bloat_the_trainer_ends_in_the_judge():
    """Colliding hashes in a set (quadratic) and a check that builds gigabytes: the judge's limits end both."""
    colliding = {"type": "set", "items": [k * (2**61 - 1) for k in range(1, 60000)]}
    assert judge([split_test("assert f(1) == {0}")], lines({"value": colliding})) == {
        "passed": [False], "error": "its results could not be checked (the judge gave up)"}
    verdict = judge([split_test("assert f(1) % 2 == 1")], lines({"value": "%2000000000d"}))
    assert verdict["passed"] == [False]
