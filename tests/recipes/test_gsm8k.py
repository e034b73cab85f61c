import json

import pandas as pd
import pytest

from kit.errors import KitError
from kit.recipes import gsm8k
from tests.conftest import chat

ROWS = [
    {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"},
    {"question": "A car costs $12,500 and a bike $500. Total?", "answer": "12,500 + 500 = 13,000\n#### $13,000"},
    {"question": "It was 5 degrees and fell by 8. Now?", "answer": "5 - 8 = -3\n#### -3"},
]


@pytest.mark.parametrize("writer", ["jsonl", "csv", "parquet"])
def test_prepare_reads_local_files(tmp_path, writer):
    frame = pd.DataFrame(ROWS)
    path = tmp_path / f"data.{writer}"
    if writer == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    elif writer == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    dataset = gsm8k.prepare("train", str(path))
    assert set(dataset.column_names) == {"prompt", "answer", "reasoning"}
    assert dataset[0]["reasoning"] == "3 + 4 = 7"  # calculator notes removed
    assert gsm8k.sft_target(dataset[0]) == "<reasoning>\n3 + 4 = 7\n</reasoning>\n<answer>\n7\n</answer>"
    assert dataset["answer"] == ["7", "13000", "-3"]
    first = dataset[0]["prompt"]
    assert first[0] == {"role": "system", "content": gsm8k.SYSTEM_PROMPT}
    assert first[1] == {"role": "user", "content": ROWS[0]["question"]}


def test_bare_number_answers_are_accepted(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"question": "q?", "answer": "$72"}) + "\n")
    assert gsm8k.prepare("train", str(path))["answer"] == ["72"]


def test_missing_column_names_it(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"problem": "q?", "answer": "#### 1"}) + "\n")
    with pytest.raises(KitError, match="lacks column\\(s\\) 'question'; it has: problem, answer"):
        gsm8k.prepare("train", str(path))


def test_row_without_final_answer_is_named(tmp_path):
    path = tmp_path / "d.jsonl"
    rows = [ROWS[0], {"question": "q?", "answer": "I am not sure ####"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(KitError, match="row 1: 'answer' has no final answer"):
        gsm8k.prepare("train", str(path))


def test_missing_file_and_unknown_type(tmp_path):
    with pytest.raises(KitError, match="does not exist"):
        gsm8k.prepare("train", str(tmp_path / "nope.jsonl"))
    with pytest.raises(KitError, match="unknown type"):
        gsm8k.prepare("train", str(tmp_path / "data.txt"))


def test_sample_data_is_gsm8k_format_and_splits_differ(tmp_path):
    gsm8k.write_sample(tmp_path / "train.jsonl", "train")
    gsm8k.write_sample(tmp_path / "test.jsonl", "test")
    train = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    test = [json.loads(line) for line in (tmp_path / "test.jsonl").read_text().splitlines()]
    assert len(train) == 64 and len(test) == 32
    assert all("\n#### " in row["answer"] for row in train + test)
    assert {r["question"] for r in train} != {r["question"] for r in test}


def weighted_total(completions, answers):
    totals = [0.0] * len(completions)
    for reward in gsm8k.REWARDS.rewards:
        for i, value in enumerate(reward.fn(completions=completions, answer=answers)):
            totals[i] += reward.weight * (value or 0.0)
    return totals


def test_bundle_scores_hand_written_completions():
    perfect = chat("<reasoning>\n3 + 4 = 7\n</reasoning>\n<answer>\n7\n</answer>\n")
    wrong = chat("<reasoning>\n3 + 4 = 8\n</reasoning>\n<answer>\n8\n</answer>\n")
    sloppy = chat("<reasoning>3 + 4 = 7</reasoning><answer>7</answer>")
    bare = chat("7")
    totals = weighted_total([perfect, wrong, sloppy, bare], ["7"] * 4)
    # correct 2.0 + integer 0.5 + strict 0.5 + soft 0.5 + xml 0.5
    assert totals == pytest.approx([4.0, 2.0, 3.5, 0.0])


def formatted(answer: str) -> str:
    return f"<reasoning>\nwork\n</reasoning>\n<answer>\n{answer}\n</answer>\n"


@pytest.mark.parametrize(
    "text, gold, strict, lenient",
    [
        (formatted("72"), "72", True, True),
        (formatted("$72.00"), "72", True, True),
        (formatted("72 dollars"), "72", True, True),
        (formatted("1,234"), "1234", True, True),
        (formatted("3/4"), "4", False, True),  # 0.75; lenient reads the last number, 4
        (formatted("12/4"), "4", False, True),
        (formatted("\\frac{3}{4}"), "4", False, True),
        (formatted("18 or 20"), "20", False, True),
        (formatted("10:30"), "30", False, True),
        (formatted("48 + 24 = 72"), "72", False, True),
        (formatted("144/2"), "72", False, False),  # the division, not its value: not the number asked for
        (formatted("48 + 24"), "72", False, False),  # the question's sum copied (issue 43)
        (formatted("18.0"), "18", True, True),
        (formatted("$1,200"), "1200", True, True),
        (formatted("1/2"), "0.5", True, True),  # a fraction is a number written out
        (formatted("50%"), "50", True, True),  # a "what percent" question: GSM8K's gold is the count of percent
        (formatted("0.5"), "50", False, False),
        (formatted("96"), "72", False, False),
        ("She sold 48 + 24 = 72 clips.", "72", False, True),  # no format: the last number of the reply
        ("so \\boxed{18 or 20}", "20", False, True),
    ],
)
def test_eval_strict_judges_the_whole_answer_and_lenient_the_last_number(text, gold, strict, lenient):
    row = {"answer": gold}
    assert tuple(gsm8k.EVAL.verdict(text, row))[:2] == (strict, lenient)


def test_bundle_pays_nothing_for_a_hedge_whose_last_number_is_right():
    hedge = chat(formatted("8 or 7"))
    # no correctness (2.0), not an integer (0.5); the format terms alone: strict 0.5 + soft 0.5 + xml 0.5
    assert weighted_total([hedge], ["7"]) == pytest.approx([1.5])


@pytest.mark.parametrize("answer", ["48 + 24", "48+24", "144/2", "\\frac{144}{2}", "2^{3} \\times 9", "8*9"])
def test_correctness_pays_no_expression_for_the_number(answer):
    """A policy paid for an expression equal to the gold copies the question's arithmetic and computes nothing."""
    correctness = gsm8k.REWARDS.rewards[0].fn
    assert correctness([chat(formatted(answer))], answer=["72"]) == [0.0]
    assert weighted_total([chat(formatted(answer))], ["72"]) == pytest.approx([1.5])  # the format terms alone


@pytest.mark.parametrize("answer, gold", [("72", "72"), ("$72", "72"), ("72 dollars", "72"), ("18.0", "18"),
                                          ("1,200", "1200"), ("$1,200.00", "1200"), ("-3", "-3"), ("0.5", "0.5")])
def test_correctness_pays_the_number_however_it_is_written(answer, gold):
    assert gsm8k.REWARDS.rewards[0].fn([chat(formatted(answer))], answer=[gold]) == [1.0]


def test_the_expression_sample_is_labelled_unpaid():
    sample = next(s for s in gsm8k.SAMPLE_COMPLETIONS if "unpaid" in s["label"])
    assert gsm8k.REWARDS.rewards[0].fn([sample["completion"]], answer=[sample["answer"]]) == [0.0]
