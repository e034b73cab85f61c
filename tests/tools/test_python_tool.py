"""The Python tool's result text: what a finished run printed, or a failure that says so first, whatever the code
printed or did to the runner around it (issue 43: a reward reads whether the run finished)."""

import pytest

from kit.tools import python_tool
from kit.tools.python import NO_OUTPUT, finished_and_printed


def run(code: str, timeout: float = 5.0) -> str:
    return python_tool(timeout=timeout)(code)


def test_a_finished_run_returns_what_it_printed():
    assert run("print(347 * 862)") == "299114" and run("x = 347\nx * 862") == "299114"
    assert run("import sys\nprint(1)\nsys.exit(0)") == "1"  # a script that ends itself cleanly has finished
    assert run("") == run("x = 1") == NO_OUTPUT


def test_the_codes_own_exception_is_a_failure_that_keeps_what_it_printed():
    assert run("1 / 0") == "error: ZeroDivisionError: division by zero"
    assert run("print(299114)\n1 / 0") == "error: ZeroDivisionError: division by zero; it printed: 299114"
    assert run("def f(:").startswith("error: SyntaxError: ")
    assert run("raise SystemExit(2)") == "error: SystemExit: 2"


def test_a_stopped_run_is_a_failure_even_after_printing():
    stopped = run("import os\nprint(1, flush=True)\nos._exit(3)")
    assert stopped == "error: the code was stopped (exit code 3); it printed: 1"
    assert run("while True:\n    print(299114)").startswith("error: the code printed more than ")


def test_a_run_past_its_deadline_is_a_failure():
    late = run("print(299114)\nwhile True:\n    pass", timeout=1.0)
    assert late == "error: the code ran past its 1 s limit; it printed: 299114"


@pytest.mark.parametrize("code", [
    "import sys\nsys.exit = lambda *a: None\n1 / 0",
    "import os\nos._exit = lambda *a: None\n1 / 0",
    "import atexit, os\natexit.register(os._exit, 0)\n1 / 0",
    "import sys\nsys.stdout.flush = lambda: __import__('os')._exit(0)\nprint(1)\n1 / 0",
    "class Quiet(Exception):\n    def __str__(self):\n        raise ValueError('no message')\nraise Quiet()",
])
def test_the_code_cannot_turn_its_exception_into_a_finish(code):
    assert run(code).startswith("error: ")


def test_finished_and_printed_reads_the_result_text():
    assert finished_and_printed("299114") and finished_and_printed("[1, 2]")
    for result in ("", NO_OUTPUT, "error: ZeroDivisionError: division by zero", "{'error': 'no tool python'}",
                   None, 42):
        assert not finished_and_printed(result), result
