"""The Python-tool recipe: disjoint offline splits, GSM8K rows with the tool, worked tool calls, and rewards that
pay for the answer only."""

from kit.recipes import load_recipe
from kit.recipes.python_tool import SAMPLE_COMPLETIONS, last_calculation, product_row, products, sft_target


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
    hack = by_label["the expression, not the number"]  # what GRPO learned to write while answer_correct paid
    assert not verdict("the expression, not the number").strict
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
