"""The Python-tool recipe: disjoint offline splits, GSM8K rows with the tool, worked tool calls, and rewards that
pay for the answer only."""

import pytest

from kit.recipes import load_recipe
from kit.recipes.python_tool import (
    ANSWER_FORMAT,
    SAMPLE_COMPLETIONS,
    call,
    last_calculation,
    product_row,
    products,
    sft_target,
    tool_ran,
)
from kit.tools import python_tool


def test_the_offline_splits_are_disjoint_and_fixed():
    train, test = products("train"), products("test")
    assert len(train) == 512 and len(test) == 200 and not set(train) & set(test)
    assert products("test") == test


def test_gsm8ks_last_calculator_note_is_the_warm_starts_call():
    assert last_calculation("48/2 = <<48/2=24>>24 and 48+24 = <<48+24=72>>72\n#### 72") == {
        "expression": "48+24", "result": "72"}
    assert last_calculation("no notes\n#### 3") == {"expression": "", "result": ""}


def test_the_worked_answer_calls_the_tool_then_answers():
    messages = sft_target(product_row(347, 862))
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant"]
    assert messages[0]["tool_calls"][0]["function"] == {"name": "python", "arguments": {"code": "347 * 862"}}
    assert messages[1]["content"] == "299114" and messages[2]["content"] == "<answer>299114</answer>"


def test_the_answer_is_paid_not_the_tools_output():
    recipe = load_recipe("python_tool")
    by_label = {s["label"]: s for s in SAMPLE_COMPLETIONS}
    verdict = lambda label: recipe.scoring.verdict(by_label[label]["completion"], {"answer": "299114"})  # noqa: E731
    assert verdict("tool, then right").strict
    assert not verdict("tool, then misread").strict and not verdict("cut off after the tool").lenient
    hack = by_label["the expression, not the number: unpaid"]  # what GRPO learned to write while answer_correct paid
    assert not verdict("the expression, not the number: unpaid").strict
    assert recipe.rewards.rewards[0].fn([hack["completion"]], answer=["299114"]) == [0.0]


def test_gsm8k_format_rows_get_the_tool_prompt_and_their_last_calculation(tmp_path):
    from kit.recipes import gsm8k
    from kit.recipes.python_tool import SYSTEM_PROMPT, prepare

    path = tmp_path / "gsm8k.jsonl"
    gsm8k.write_sample(path, "train")  # the hub dataset's columns: question, answer with <<...>> notes
    rows = prepare("train", str(path))
    row = rows[0]
    assert row["prompt"][0] == {"role": "system", "content": SYSTEM_PROMPT} and row["answer"].isdigit()
    assert row["expression"] and row["result"] and set(rows.column_names) == {"prompt", "answer", "expression",
                                                                             "result"}


# --- issue 43: each reward pays only for what it says ---

def transcript(code: str, result: str, answer: str = "299114") -> list[dict]:
    return [{"role": "assistant", "content": "", "tool_calls": [call(code)]},
            {"role": "tool", "name": "python", "content": result},
            {"role": "assistant", "content": f"<answer>{answer}</answer>"}]


def ran(code: str, timeout: float = 5.0) -> float:
    """tool_ran on a transcript whose tool result is the one python_tool really returns for `code`."""
    return tool_ran([transcript(code, python_tool(timeout=timeout)(code))])[0]


def test_tool_ran_pays_a_call_that_finished_and_printed():
    assert ran("print(347 * 862)") == 1.0 and ran("347 * 862") == 1.0
    assert ran("import sys\nprint(347 * 862)\nsys.exit()") == 1.0  # a script that ends itself cleanly has finished


@pytest.mark.parametrize("code", [
    "",  # nothing to run
    "x = 347 * 862",  # ran, printed nothing
    "1 / 0",  # raised
    "def f(:",  # does not parse
    "print(299114)\n1 / 0",  # printed the answer, then raised
    "print(299114)\nraise SystemExit(1)",
    "import os\nprint(299114, flush=True)\nos._exit(3)",  # stopped with a failure status
    "bytearray(10 ** 10)",  # past the memory limit
    "while True:\n    print(299114)",  # a flood, stopped at the sandbox's output cap
    "print('error: nothing wrong')",  # looks like a failure: text that reads as one earns nothing either
    "print('(no output: print the value you want to see)')",
    "import sys\nsys.exit = lambda *a: None\nprint(299114)\n1 / 0",  # the runner's exit, disabled
    "import os\nos._exit = lambda *a: None\nprint(299114)\n1 / 0",
    "import atexit, os\natexit.register(os._exit, 0)\nprint(299114)\n1 / 0",  # a clean exit, queued for after
])
def test_tool_ran_pays_nothing_for_a_call_that_did_not_finish_with_output(code):
    assert ran(code) == 0.0, python_tool()(code)


def test_tool_ran_pays_nothing_for_a_timeout_whatever_was_printed_first():
    assert ran("print(299114)\nwhile True:\n    pass", timeout=1.0) == 0.0


def test_tool_ran_pays_nothing_for_a_tool_that_failed_in_trl():
    assert tool_ran([transcript("347 * 862", "{'error': 'Tool python raised: boom'}")]) == [0.0]
    assert tool_ran([transcript("347 * 862", "299114")[2:], "<answer>299114</answer>"]) == [0.0, 0.0]


@pytest.mark.parametrize("reply, paid", [
    ("<answer>299114</answer>", 1.0), ("<answer>299,114</answer>", 1.0), ("<answer>-3.5</answer>", 1.0),
    ("<answer>1,234,567.25</answer>", 1.0),
    ("<answer>,</answer>", 0.0), ("<answer>,,,</answer>", 0.0), ("<answer>1,2</answer>", 0.0),
    ("<answer>-</answer>", 0.0), ("<answer>12,34,567</answer>", 0.0), ("<answer>347*862</answer>", 0.0),
])
def test_the_answer_format_needs_a_number(reply, paid):
    assert ANSWER_FORMAT([[{"role": "assistant", "content": reply}]]) == [paid]


def test_samples_labelled_unpaid_earn_nothing_from_the_reward_they_name():
    recipe = load_recipe("python_tool")
    for sample in SAMPLE_COMPLETIONS:
        values = {r.name: r.fn([sample["completion"]], answer=[sample["answer"]])[0] for r in recipe.rewards.rewards}
        if "tool_ran unpaid" in sample["label"]:
            assert values["tool_ran"] == 0.0, sample["label"]
        if "unpaid" in sample["label"] and "tool_ran" not in sample["label"]:
            assert values["exact_match"] == 0.0, sample["label"]


def test_the_samples_tool_results_are_what_the_tool_returns_for_their_calls():
    tool = python_tool()
    for sample in SAMPLE_COMPLETIONS:
        messages = sample["completion"]
        for reply, result in zip(messages, messages[1:]):
            if result["role"] == "tool":
                assert tool(reply["tool_calls"][0]["function"]["arguments"]["code"]) == result["content"], sample
