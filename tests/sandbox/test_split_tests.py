"""Tests split into probes (run in the sandbox) and a verdict over plain values (run here)."""

import json

import pytest

from kit.sandbox.checker import RUN_CPU_SECONDS, decode
from kit.sandbox.execute import ProbeRun, call_checker, check_runs
from kit.sandbox.split_tests import UnsupportedTest, split_test

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
    # methods and subscripts of built-in types run in the checker, on the plain value
    ("assert greet('Bob').startswith('Hello')", ["greet('Bob')"], "_probe0.startswith('Hello')"),
    ("assert add(2, 3).__eq__(5)", ["add(2, 3)"], "_probe0.__eq__(5)"),
    ("assert f(1)[0] == 2", ["f(1)"], "_probe0[0] == 2"),
    ("assert RESULT.upper() == 'A'", ["RESULT"], "_probe0.upper() == 'A'"),
    ("assert f(1).count(2) == f(2).count(1)", ["f(1)", "f(2)"], "_probe0.count(2) == _probe1.count(1)"),
    # the solution's own methods run in the sandbox: no built-in has them, or the test builds its class
    ("assert Stack().push(1) == 1", ["Stack().push(1)"], "_probe0 == 1"),
    ("assert LRUCache(2).get(1) == -1", ["LRUCache(2).get(1)"], "_probe0 == -1"),
    ("assert Solution().twoSum([2, 7], 9)[0] == 0", ["Solution().twoSum([2, 7], 9)"], "_probe0[0] == 0"),
    ("assert make_adder(2)(3) == 5", ["make_adder(2)(3)"], "_probe0 == 5"),
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


def judged(tests: list[str], answers: list[str]):
    return check_runs([ProbeRun([split_test(t) for t in tests], answers, None, False)])[0]


def test_the_checker_compares_plain_values():
    test = ["assert pair(1) == (1, 2)"]
    assert judged(test, lines({"value": {"type": "tuple", "items": [1, 2]}})).passed == 1
    assert judged(test, lines({"value": [1, 2]})).passed == 0  # a list is not the tuple the test expects
    failed = judged(test, lines({"error": "ZeroDivisionError: division by zero"}))
    assert (failed.passed, failed.error) == (0, "ZeroDivisionError: division by zero")


def test_values_come_back_with_their_types():
    assert decode({"type": "tuple", "items": [1, {"type": "set", "items": [2]}]}) == (1, {2})
    assert decode({"type": "dict", "items": [[{"type": "tuple", "items": [1]}, [2]]]}) == {(1,): [2]}
    assert decode({"type": "bytes", "hex": "6869"}) == b"hi"


def test_unreadable_or_missing_results_fail_and_never_pass():
    result = judged(["assert f(1) == 5", "assert f(2) == 5", "assert f(3) == 5"], ['{"value": 5}', "not json"])
    assert result.passed == 1 and "unreadable" in result.error


COLLIDING = {"type": "set", "items": [k * (2**61 - 1) for k in range(1, 60000)]}  # one hash: quadratic to build


def test_a_check_that_would_stall_or_bloat_the_trainer_ends_in_the_checker():
    """Colliding hashes in a set and a check that builds gigabytes: the checker's limits end both."""
    stalled = judged(["assert f(1) == {0}"], lines({"value": COLLIDING}))
    expected = f"its results took the checker more than {RUN_CPU_SECONDS} s to check"
    assert (stalled.passed, stalled.error) == (0, expected)
    assert judged(["assert f(1) % 2 == 1"], lines({"value": "%2000000000d"})).passed == 0


def test_one_pathological_run_fails_only_itself_in_a_batch():
    runs = [ProbeRun([split_test("assert f(1) == 5")], lines({"value": 5}), None, False),
            ProbeRun([split_test("assert f(1) == {0}")], lines({"value": COLLIDING}), None, False),
            ProbeRun([split_test("assert f(1) == 7")], lines({"value": 7}), None, False)]
    assert [r.passed for r in check_runs(runs)] == [1, 0, 1]


def test_the_checker_bounds_its_work_per_run_and_keeps_the_batch():
    """Issue 30: a batch of colliding values cost about 6 s. Each run now has its own CPU budget, so the one
    checker process answers for the whole batch instead of giving up and checking every run again alone."""
    honest = ProbeRun([split_test("assert f(1) == 5")], lines({"value": 5}), None, False)
    slow = ProbeRun([split_test("assert f(1) == {0}")], lines({"value": COLLIDING}), None, False)
    verdicts = call_checker([slow, honest, slow, slow, honest])
    assert verdicts is not None
    assert [v["passed"] for v in verdicts] == [[False], [True], [False], [False], [True]]
    assert [v["error"] is None for v in verdicts] == [False, True, False, False, True]


def test_a_check_with_a_generator_sees_the_probes():
    """`any(... for v in ...)` runs in a scope of its own, which eval's locals never reach: a right answer scored 0."""
    test = ["assert any(add(2, 3) == v for v in (5, 6))"]
    assert split_test(test[0]).check == "any((_probe0 == v for v in (5, 6)))"
    assert judged(test, lines({"value": 5})).passed == 1
    assert judged(test, lines({"value": 7})).passed == 0


def test_a_run_that_timed_out_passes_nothing_whatever_it_answered_first():
    run = ProbeRun([split_test("assert f(1) == 5")], lines({"value": 5}), "timed out", True)
    result = check_runs([run])[0]
    assert (result.passed, result.error, result.timed_out) == (0, "timed out", True)
