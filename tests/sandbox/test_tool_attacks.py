"""Red team, the tool path: code a policy writes into the Python tool (kit.tools.python_tool) runs in the sandbox.

What the code prints only goes back to the model; the one reward that reads a result (python_tool's tool_ran)
reads whether the run finished, from its exit status, which tests/tools/test_python_tool.py attacks. What
such code could still do is reach the host: read its secrets, change its files, signal the trainer, take its
network, or hang the run. Each attack runs under every isolation level this machine offers, and any failure
comes back as text for the model, never as an exception in the trainer.
"""

import os
import subprocess
import sys

from kit.tools import python_tool
from kit.tools.python import RUNNER


def run(code: str, level: str, timeout: float = 5.0) -> str:
    return python_tool(timeout=timeout, level=level)(code)


def test_the_tool_computes_and_prints_a_last_expression(level):
    assert run("print(347 * 862)", level) == "299114"
    assert run("x = 347\nx * 862", level) == "299114"


def test_errors_come_back_as_text(level):
    assert run("1 / 0", level) == "error: ZeroDivisionError: division by zero"
    assert run("def f(:", level).startswith("error: SyntaxError: ")
    assert run("", level) == "(no output: print the value you want to see)"


def test_host_secrets_are_out_of_reach(level, tmp_path, monkeypatch):
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    monkeypatch.setenv("KIT_TEST_TOKEN", "hunter2")
    for code in (f"print(open({str(secret)!r}).read())", "import os; print(os.environ.get('KIT_TEST_TOKEN'))",
                 "print(open(f'/proc/{__import__(\"os\").getppid()}/environ', 'rb').read())"):
        assert "hunter2" not in run(code, level), code


def test_control_the_same_attacks_work_without_the_sandbox(tmp_path, monkeypatch):
    """The tool's own runner in a plain process: the secret is read and the file planted, so the tests above
    pass because of the sandbox, not because the attacks are broken."""
    secret, target = tmp_path / "secret.txt", tmp_path / "planted"
    secret.write_text("hunter2")
    monkeypatch.setenv("KIT_TEST_TOKEN", "hunter2")
    code = (f"print(open({str(secret)!r}).read())\nimport os; print(os.environ.get('KIT_TEST_TOKEN'))\n"
            f"open({str(target)!r}, 'w').write('pwned')")
    plain = subprocess.run([sys.executable, "-c", RUNNER.format(code=code)], capture_output=True, text=True,
                           timeout=30)
    assert plain.stdout.count("hunter2") == 2 and target.read_text() == "pwned"


def test_host_files_stay_unchanged(level, tmp_path):
    target = tmp_path / "planted"
    answer = run(f"open({str(target)!r}, 'w').write('pwned')\nprint('wrote it')", level)
    assert not target.exists(), answer


def test_the_trainer_survives_a_kill_aimed_at_it(level):
    # Were the signal to reach this process (the trainer), pytest itself would die here and the run fail.
    answer = run(f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)\nos.kill(os.getppid(), signal.SIGKILL)",
                 level)
    assert isinstance(answer, str) and answer


def test_the_network_is_closed(level):
    network = run("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)\nprint('connected')", level)
    assert "connected" not in network


def test_a_hang_or_a_flood_is_cut_short_and_reported(level):
    assert run("while True:\n    pass", level, timeout=1.0) == "error: the code ran past its 1 s limit"
    flood = run("print('x' * 100000)", level)
    assert len(flood) < 1100 and flood.endswith("more characters cut)")
