"""The code sandbox: model-written code runs under the operating system's isolation, and cannot forge its score.

    from kit.sandbox import run_python
    run_python("def add(a, b):\n    return a + b", ["assert add(2, 3) == 5"]).fraction  # 1.0

isolation.py builds each level's command (bubblewrap, the kit's own namespaces, or, only when asked,
unisolated);
namespaces.py is the namespaces level; harness.py runs inside, gives up what confine.py takes (capabilities,
dumpability, and with Landlock writes outside its folder) and installs seccomp.py's filter; split_tests.py
keeps every test's expected values and comparisons outside, where checker.py's process compares them with what
the run returned; execute.py picks the level by a trial run, and starts, reads and kills runs.
"""

from kit.sandbox.execute import SandboxResult, active_level, describe_active_level, run_program, run_python
from kit.sandbox.isolation import SandboxUnavailable
from kit.sandbox.split_tests import UnsupportedTest, split_test

__all__ = ["SandboxResult", "SandboxUnavailable", "UnsupportedTest", "active_level", "describe_active_level",
           "run_program", "run_python", "split_test"]
