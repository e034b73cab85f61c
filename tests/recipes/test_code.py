"""The code recipe: MBPP rows with one shown test and hidden ones, paid only through the sandbox."""

import json
import os

import pytest

from kit.checks.rewards_check import run_bundle, weighted_totals
from kit.errors import KitError
from kit.recipes import code
from kit.rewards.code import prepare_code_rewards
from kit.sandbox import execute, isolation
from tests.conftest import chat

ADD_HIDDEN = ["assert add(-4, 4) == 0", "assert add(10, 25) == 35", "assert add(0, 7) == 7"]


@pytest.fixture
def sandboxed(monkeypatch) -> str:
    """An operating-system isolation level: the cheats below must meet the real sandbox, not its fallback."""
    monkeypatch.setenv(isolation.ENV_VAR, "auto")
    try:
        return execute.active_level()
    except KitError as err:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the code recipe in the sandbox: {err}")
        pytest.skip(f"no sandbox here: {err}")


@pytest.fixture
def sample(tmp_path) -> dict:
    paths = {}
    for split in ("train", "test"):
        paths[split] = tmp_path / f"code-{split}.jsonl"
        code.write_sample(paths[split], split)
    return paths


def prompt_text(row) -> str:
    return "\n".join(message["content"] for message in row["prompt"])


def hidden_score(text: str, tests: list[str]) -> float:
    return code.CODE_TESTS([chat(text)], tests=[tests])[0]


def test_the_sample_prepares_into_shown_and_hidden_tests(sample):
    train, test = code.prepare("train", str(sample["train"])), code.prepare("test", str(sample["test"]))
    assert (len(train), len(test)) == (30, 10)
    assert set(train.column_names) == {"prompt", "tests", "example_test", "solution"}
    for row in [*train, *test]:
        assert row["prompt"][0] == {"role": "system", "content": code.SYSTEM_PROMPT}
        assert row["example_test"] in row["prompt"][1]["content"]
        assert len(row["tests"]) >= 2
        assert not any(hidden in prompt_text(row) for hidden in row["tests"]), "a hidden test is in the prompt"
    assert not {r["example_test"] for r in train} & {r["example_test"] for r in test}, "a task is in both splits"


def test_every_sample_solution_passes_its_hidden_tests_and_counts_as_right(sample, sandboxed):
    rows = code.prepare("train", str(sample["train"])).to_list()
    targets = [code.sft_target(row) for row in rows]
    assert code.CODE_TESTS([chat(t) for t in targets], tests=[r["tests"] for r in rows]) == [1.0] * len(rows)
    assert all(code.EVAL.verdict(target, row).strict for target, row in zip(targets, rows))


def test_the_run_finds_the_sandbox_and_accepts_every_rows_tests(sample, sandboxed):
    rows = code.prepare("train", str(sample["train"])).to_list()
    description = prepare_code_rewards("auto", code.REWARDS.funcs, rows)
    assert description == isolation.DESCRIPTIONS[sandboxed]


def test_partial_credit_is_the_fraction_of_hidden_tests_passed(sandboxed):
    assert hidden_score("def add(a, b):\n    return a + b", ADD_HIDDEN) == 1.0
    assert hidden_score("def add(a, b):\n    return abs(a) + b", ADD_HIDDEN) == pytest.approx(2 / 3)
    assert hidden_score("def add(a, b):\n    return 5", ADD_HIDDEN) == 0.0  # the shown value, hard-coded


@pytest.mark.parametrize("cheat", [
    "import sys\nsys.exit(0)",
    "import os\nos._exit(0)",
    "print('all tests passed')\nraise SystemExit",
    "class Any:\n    def __eq__(self, other):\n        return True\n\ndef add(a, b):\n    return Any()",
    "import builtins\nbuiltins.AssertionError = None\ndef add(a, b):\n    return None",  # `assert` cannot fail?
    "function add(a, b) { return a + b; }",  # not Python
])
def test_code_that_cheats_or_is_not_python_earns_no_test(cheat, sandboxed):
    assert hidden_score(f"```python\n{cheat}\n```", ADD_HIDDEN) == 0.0


READS_THE_DATA = """
import json
def {name}(*args):
    for line in open({path!r}):
        for test in json.loads(line)["test_list"]:
            if test.startswith("assert {name}(" + ", ".join(map(repr, args)) + ")"):
                return eval(test.rsplit("== ", 1)[1])
"""


def test_code_that_reads_the_hidden_tests_from_the_data_file_gets_nothing_in_the_sandbox(sample, sandboxed):
    row = code.prepare("train", str(sample["train"]))[0]
    name = row["example_test"].split("assert ", 1)[1].split("(", 1)[0]
    cheat = READS_THE_DATA.format(name=name, path=str(sample["train"].resolve()))
    outside: dict = {}
    exec(cheat, outside)  # control: on this machine the file is there and the cheat works
    hidden = row["tests"][0]
    assert eval(hidden.removeprefix("assert "), outside), "the cheat should pass outside the sandbox"
    assert hidden_score(cheat, row["tests"]) == 0.0


def test_format_and_scoring(sandboxed):
    row = {"example_test": "assert add(2, 3) == 5", "tests": ADD_HIDDEN}
    fenced, bare = "```python\ndef add(a, b):\n    return a + b\n```", "def add(a, b):\n    return a + b"
    assert tuple(code.EVAL.verdict(fenced, row)) == (True, True, True)
    assert tuple(code.EVAL.verdict(bare, row)) == (False, True, False)
    assert code.EVAL.verdict("```python\ndef add(a, b):\n    return 0\n```", row).formatted
    assert not code.EVAL.verdict("```python\nfunction add(a, b) {}\n```", row).formatted
    # evaluation counts the shown test too: passing only the hidden ones is not right
    only_hidden = "```python\ndef add(a, b):\n    return 0 if (a, b) == (2, 3) else a + b\n```"
    assert hidden_score(only_hidden, ADD_HIDDEN) == 1.0 and not code.EVAL.verdict(only_hidden, row).strict


def test_sample_completions_score_as_labelled(sandboxed):
    runs = run_bundle(code.REWARDS, code.SAMPLE_COMPLETIONS)
    assert not [w for run in runs for w in run.warnings]
    totals = dict(zip([s["label"] for s in code.SAMPLE_COMPLETIONS],
                      weighted_totals(runs, len(code.SAMPLE_COMPLETIONS))))
    assert totals["right, in a block"] == 2.5 and totals["right, bare code"] == 2.25
    assert totals["passes some tests"] == pytest.approx(2 * 2 / 3 + 0.5)
    for cheat in ("returns the shown value", "exits before the tests", "equal to everything"):
        assert totals[cheat] == 0.5, f"{cheat}: only the format rewards may pay it"
    assert totals["not Python"] == 0.25 and totals["prose"] == 0.0


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_mbpp_full_rows_are_read_and_unusable_ones_dropped_and_counted(tmp_path, capsys):
    tests = ["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(-1, 1) == 0"]
    rows = [
        {"task_id": 1, "text": "Add two numbers.", "code": "def add(a, b): return a + b", "test_list": tests,
         "test_setup_code": ""},
        {"task_id": 2, "text": "Uses a fixture.", "code": "", "test_list": tests, "test_setup_code": "x = 1"},
        {"task_id": 3, "text": "One test only.", "code": "", "test_list": tests[:1], "test_setup_code": ""},
        {"task_id": 4, "text": "Unsplittable.", "code": "", "test_setup_code": "",  # two unknown names: refused
         "test_list": [tests[0], "assert add(1, 2) == EXPECTED"]},
    ]
    write_rows(tmp_path / "full.jsonl", rows)
    dataset = code.prepare("train", str(tmp_path / "full.jsonl"))
    assert dataset["example_test"] == [tests[0]] and dataset["tests"] == [tests[1:]]
    assert dataset[0]["prompt"][1]["content"].startswith("Add two numbers.")
    assert "dropped 3 of 4 tasks" in capsys.readouterr().out


def test_the_tests_imports_are_shown_and_a_table_without_usable_tasks_is_refused(tmp_path):
    row = {"prompt": "Area of a circle.", "code": "", "test_imports": ["import math"],
           "test_list": ["assert math.isclose(area(1), 3.14159, rel_tol=1e-3)", "assert area(0) == 0"]}
    write_rows(tmp_path / "s.jsonl", [row])
    prepared = code.prepare("train", str(tmp_path / "s.jsonl"))[0]
    assert "The tests first run: import math" in prepared["prompt"][1]["content"]
    with pytest.raises(KitError, match="a code row without a reference solution"):
        code.sft_target(prepared)
    write_rows(tmp_path / "none.jsonl", [{**row, "test_list": row["test_list"][:1]}])
    with pytest.raises(KitError, match="no task has two tests the sandbox can check"):
        code.prepare("train", str(tmp_path / "none.jsonl"))
