import json
import re

import pytest

from kit.config import DataConfig
from kit.data import load_rows
from kit.errors import KitError
from kit.recipes import csv_qa, load_recipe
from tests.conftest import REPO, chat
from tests.recipes.samples import prepared_samples

# The bring-your-own-data example, as the Recipes page (docs/recipes.md) shows it.
RECIPES_PAGE = (REPO / "docs" / "recipes.md").read_text()
RECIPES_PAGE_CSV = re.search(r"\*\*csv_qa\*\*.*?```csv\n(.*?)```", RECIPES_PAGE, re.DOTALL).group(1)


def write_csv(tmp_path, text, name="questions.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_without_a_file_it_says_to_pass_one():
    with pytest.raises(KitError, match="no hub dataset: pass your file with DATA=my_questions.csv"):
        csv_qa.prepare("train", None)


def test_the_readmes_three_line_csv_is_a_dataset(tmp_path):
    dataset = csv_qa.prepare("train", write_csv(tmp_path, RECIPES_PAGE_CSV))
    assert set(dataset.column_names) == {"prompt", "answer", "answer_type"}
    assert dataset["answer"] == ["Nairobi", "8"]
    assert dataset["answer_type"] == ["text", "number"]  # inferred: no answer_type column
    assert dataset[0]["prompt"] == [{"role": "system", "content": csv_qa.SYSTEM_PROMPT},
                                    {"role": "user", "content": "What is the capital of Kenya?"}]


def test_a_csv_without_the_answer_column_is_refused_naming_it(tmp_path):
    path = write_csv(tmp_path, "question,reply\nWhat is 2+2?,4\n")
    with pytest.raises(KitError, match="lacks column\\(s\\) 'answer'; it has: question, reply"):
        csv_qa.prepare("train", path)


def test_the_answer_type_column_is_read_and_empty_cells_are_inferred(tmp_path):
    text = "question,answer,answer_type\nQ1,42,\nQ2,B,choice\nQ3,Lima,Text\nQ4,12,text\n"
    dataset = csv_qa.prepare("train", write_csv(tmp_path, text))
    assert dataset["answer_type"] == ["number", "choice", "text", "text"]


def test_a_number_column_comes_back_as_written(tmp_path):
    dataset = csv_qa.prepare("train", write_csv(tmp_path, "question,answer\nQ1,42\nQ2,3.5\nQ3,-7\n"))
    assert dataset["answer"] == ["42", "3.5", "-7"]  # the CSV reader's 42.0 is 42 again


@pytest.mark.parametrize("rows, message", [
    ("Q1,42,numeric\n", "row 0: answer_type 'numeric' is not one of number, text, choice"),
    ("Q1,forty,number\n", "row 0: answer_type is number but the answer 'forty' is not a number"),
    ("Q1,42,\nQ2,,\n", "row 1: 'answer' is empty"),
    (",42,\n", "row 0: 'question' is empty"),
])
def test_a_broken_row_is_named(tmp_path, rows, message):
    with pytest.raises(KitError, match=message):
        csv_qa.prepare("train", write_csv(tmp_path, "question,answer,answer_type\n" + rows))


@pytest.mark.parametrize("answer, kind", [
    ("42", "number"), ("-1,250.50", "number"), ("$12", "number"), ("12%", "number"), ("3/4", "number"),
    ("1.5e3", "number"), ("Nairobi", "text"), ("B", "text"), ("42 apples", "text"), ("1990s", "text"),
])
def test_infer_type(answer, kind):
    assert csv_qa.infer_type(answer) == kind


def scores(pairs, kind=None):
    completions = [chat(reply) for reply, _ in pairs]
    return csv_qa.answer_match(completions, answer=[gold for _, gold in pairs], answer_type=[kind] * len(pairs))


def test_numbers_match_numerically():
    assert scores([("<answer>1250.5</answer>", "1,250.50"), ("<answer>$1,250.50</answer>", "1250.5"),
                   ("<answer>1250</answer>", "1250.5")], "number") == [1.0, 1.0, 0.0]


def test_short_text_and_choices_match_exactly_after_normalising():
    assert scores([("<answer>nairobi.</answer>", "Nairobi"), ("<answer>Nairobi City</answer>", "Nairobi")],
                  "text") == [1.0, 0.0]
    long_choice = "the dolphin in the sea"
    assert scores([("<answer>(B)</answer>", "B"), ("<answer>the dolphin in a sea</answer>", long_choice)],
                  "choice") == [1.0, 0.0]


def test_long_text_earns_its_similarity():
    gold = "log the over jumps fox red"
    close, far = scores([(f"<answer>{gold[:-4]}</answer>", gold), ("<answer>no</answer>", gold)], "text")
    assert 0.8 < close < 1.0 and far < 0.3


def test_without_an_answer_type_the_kind_is_inferred_per_row():
    """A user's --completions file for `kit rewards check` may leave the column out."""
    values = csv_qa.answer_match([chat("<answer>8.0</answer>"), chat("<answer>NAIROBI</answer>")],
                                 answer=["8", "Nairobi"])
    assert values == [1.0, 1.0]


def test_a_row_without_a_gold_answer_does_not_apply():
    assert csv_qa.answer_match([chat("x")], answer=[None]) == [None]


@pytest.mark.parametrize("reply, ends_right", [
    ("<answer>8</answer>", True),
    ("Spiders are arachnids, so\n<answer>8</answer>\n", True),
    ("<answer>8</answer> Hope that helps!", False),
    ("<answer>6</answer> no, <answer>8</answer>", False),
    ("<answer> </answer>", False),
    ("8", False),
])
def test_the_format_reward_wants_one_answer_tag_last(reply, ends_right):
    assert csv_qa.answer_at_end([chat(reply)]) == [float(ends_right)]


@pytest.mark.parametrize("reply, strict, lenient, formatted", [
    ("Eight legs.\n<answer>8</answer>", True, True, True),
    ("The answer is 8.", False, True, False),
    ("<answer>6</answer>", False, False, True),
    ("", False, False, False),
])
def test_scoring(reply, strict, lenient, formatted):
    row = {"answer": "8", "answer_type": "number"}
    scoring = csv_qa.EVAL
    assert tuple(scoring.verdict(reply, row)) == \
        (strict, lenient, formatted)


def test_a_close_long_answer_counts_as_right_in_evaluation():
    row = {"answer": "log the over jumps fox red", "answer_type": "text"}
    assert csv_qa.EVAL.verdict("<answer>log the over jumps fox</answer>", row).strict
    assert not csv_qa.EVAL.verdict("<answer>fox red</answer>", row).strict


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return prepared_samples(csv_qa, tmp_path_factory.mktemp("csv-qa"))


def test_the_sample_mixes_every_kind_of_answer(sample):
    train, test = sample["train"], sample["test"]
    assert (len(train), len(test)) == (64, 32)
    assert set(train["answer_type"]) == {"number", "text", "choice"}
    assert {r["prompt"][1]["content"] for r in train} != {r["prompt"][1]["content"] for r in test}


def test_each_sample_rows_worked_answer_is_right_in_the_strict_sense(sample):
    for row in sample["train"]:
        assert csv_qa.EVAL.verdict(csv_qa.sft_target(row), row).strict, row


def test_the_smoke_profile_reads_the_sample_through_the_kit():
    rows = load_rows(load_recipe("csv_qa"), DataConfig(path="sample", split="test"))
    assert len(rows) == 32 and {"answer", "answer_type"} <= set(rows.column_names)


EXPECTED = {  # label: (answer_match, answer_at_end)
    "number, right": (1.0, 1.0),
    "number, right as 51.0": (1.0, 1.0),
    "number, wrong": (0.0, 1.0),
    "short text, other case": (1.0, 1.0),
    "short text, wrong": (0.0, 1.0),
    "long text, close": (pytest.approx(0.846, abs=0.001), 1.0),
    "choice, right": (1.0, 1.0),
    "choice, wrong": (0.0, 1.0),
    "right, no tag": (1.0, 0.0),
    "right, then chatter": (1.0, 0.0),
    "empty": (0.0, 0.0),
}


def test_the_shipped_sample_completions_score_as_labelled():
    samples = csv_qa.SAMPLE_COMPLETIONS
    assert [s["label"] for s in samples] == list(EXPECTED)
    columns = {key: [s[key] for s in samples] for key in ("answer", "answer_type")}
    values = [r.fn(completions=[s["completion"] for s in samples], **columns) for r in csv_qa.REWARDS.rewards]
    for sample, got in zip(samples, zip(*values)):
        assert got == EXPECTED[sample["label"]], sample["label"]


def test_a_jsonl_file_works_too(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": "Q?", "answer": 8}) + "\n")
    assert csv_qa.prepare("train", str(path))["answer"] == ["8"]
