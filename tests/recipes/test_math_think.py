"""The math_think recipe: <think> reasoning, then a \\boxed{} answer that math-verify finds equal to the gold one."""

import json
from fractions import Fraction

import pytest

from kit.checks.rewards_check import run_bundle, weighted_totals
from kit.errors import KitError
from kit.recipes import math_think
from tests.conftest import chat
from tests.recipes.samples import prepared_samples

GOLD = "\\frac{3}{4}"


def boxed_correct(text: str, gold: str = GOLD) -> float | None:
    return math_think.boxed_correct([chat(text)], answer=[gold])[0]


def think_format(text: str) -> float:
    return math_think.think_format([chat(text)])[0]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> dict:
    return prepared_samples(math_think, tmp_path_factory.mktemp("math-think"))


def test_the_sample_prepares_into_prompts_gold_answers_and_reasoning(sample):
    train, test = sample["train"], sample["test"]
    assert (len(train), len(test)) == (60, 24)
    assert set(train.column_names) == {"prompt", "answer", "reasoning"}
    assert train[0]["prompt"] == [{"role": "system", "content": math_think.SYSTEM_PROMPT},
                                  {"role": "user", "content": "If $x = 4$, what is the value of $x^2 - 6x$?"}]
    assert train[0]["answer"] == "-8"  # (4)^2 - 6 * 4
    assert not {r[1]["content"] for r in train["prompt"]} & {r[1]["content"] for r in test["prompt"]}
    assert not any("\\boxed" in reasoning for reasoning in train["reasoning"]), "the reasoning states, not boxes"
    kinds = {"\\frac": 0, "\\sqrt": 0, "integer": 0}
    for answer in [*train["answer"], *test["answer"]]:
        kinds["\\frac" if "\\frac" in answer else "\\sqrt" if "\\sqrt" in answer else "integer"] += 1
    assert min(kinds.values()) >= 5, kinds


def test_every_sample_answer_worked_out_in_its_target_is_right(sample):
    rows = [*sample["train"], *sample["test"]]
    targets = [math_think.sft_target(row) for row in rows]
    assert math_think.boxed_correct([chat(t) for t in targets], answer=[r["answer"] for r in rows]) == [1.0] * 84
    assert all(math_think.EVAL.verdict(target, row).strict for target, row in zip(targets, rows))
    assert math_think.sft_target(rows[0]) == ("<think>\n$(4)^2 - 6 \\cdot (4) = 16 - (24) = -8$. The answer is $-8$."
                                              "\n</think>\nThe answer is $\\boxed{-8}$.")


def test_fractions_are_written_in_latex():
    assert [math_think.latex(Fraction(n, d)) for n, d in [(6, 8), (-3, 4), (10, 5), (0, 3)]] == [
        "\\frac{3}{4}", "-\\frac{3}{4}", "2", "0"]


@pytest.mark.parametrize("text, correct", [
    ("<think>\n1/2 + 1/4\n</think>\nThe answer is $\\boxed{\\frac{3}{4}}$.", 1.0),
    ("<think>\nhalf and a quarter\n</think>\n$\\boxed{0.75}$", 1.0),  # math-verify: 0.75 == 3/4
    ("<think>\nx\n</think>\n$\\boxed{3/4}$", 1.0),
    ("<think>\nx\n</think>\n$\\boxed{\\dfrac{6}{8}}$", 1.0),
    ("<think>\nx\n</think>\n$\\boxed{\\frac{4}{3}}$", 0.0),
    ("<think>\nmaybe \\boxed{\\frac{3}{4}}\n</think>\nSo $\\boxed{2}$.", 0.0),  # the answer after thinking counts
    ("<think>\nit is \\boxed{\\frac{3}{4}}\n</think>\nDone.", 0.0),  # a box inside the reasoning is not an answer
    ("<think>\nstill thinking about \\boxed{\\frac{3}{4}}", 0.0),  # cut off before the block closed
    ("The answer is $\\boxed{\\frac{3}{4}}$.", 1.0),  # no think tags: right, though not in format
    ("<think>\nx\n</think>\n$\\boxed{}$", 0.0),
    ("", 0.0),
])
def test_correctness_reads_the_box_after_the_reasoning(text, correct):
    assert boxed_correct(text) == correct


def test_roots_and_integers_are_judged_by_value():
    assert boxed_correct("<think>x</think> $\\boxed{2\\sqrt{2}}$", "2\\sqrt{2}") == 1.0
    assert boxed_correct("<think>x</think> $\\boxed{\\sqrt{8}}$", "2\\sqrt{2}") == 1.0
    assert boxed_correct("<think>x</think> $\\boxed{2.83}$", "2\\sqrt{2}") == 0.0
    assert boxed_correct("<think>x</think> $\\boxed{-7}$", "-7") == 1.0
    assert math_think.boxed_correct([chat("$\\boxed{1}$")] * 2, answer=[None, " "]) == [None, None]


@pytest.mark.parametrize("text, score", [
    ("<think>\nwork\n</think>\n$\\boxed{1}$", 1.0),
    ("  <think>work</think>The answer is \\boxed{1}.", 1.0),
    ("work\n</think>\n$\\boxed{1}$", 1.0),  # the chat template wrote <think> (DeepSeek-R1 distills)
    ("<think>\nwork\n</think>\nThe answer is 1.", 0.5),  # a block, but no box after it
    ("<think>\nwork \\boxed{1}\n</think>\nso 1", 0.5),
    ("<think>\n \n</think>\n$\\boxed{1}$", 0.0),  # no reasoning in the block
    ("<think>a</think><think>b</think> $\\boxed{1}$", 0.0),
    ("<think>a</think> $\\boxed{1}$ </think>", 0.0),
    ("Sure! <think>a</think> $\\boxed{1}$", 0.0),  # the block must come first
    ("$\\boxed{1}$", 0.0),
])
def test_think_format_wants_one_block_first_then_a_box(text, score):
    assert think_format(text) == score


def test_scoring_strict_lenient_and_format():
    row = {"answer": GOLD}
    right = "<think>\nsum\n</think>\n$\\boxed{\\frac{3}{4}}$"
    unformatted = "The sum is \\boxed{0.75}"
    tagged = "<answer>3/4</answer>"
    wrong = "<think>\nsum\n</think>\n$\\boxed{1}$"
    texts = (right, unformatted, tagged, wrong)
    assert [math_think.EVAL.verdict(t, row).strict for t in texts] == [True, False, False, False]
    assert [math_think.EVAL.verdict(t, row).lenient for t in texts] == [True, True, True, False]
    assert [math_think.EVAL.verdict(t, row).formatted for t in texts] == [True, False, False, True]


def test_sample_completions_score_as_labelled():
    runs = run_bundle(math_think.REWARDS, math_think.SAMPLE_COMPLETIONS)
    assert not [w for run in runs for w in run.warnings]
    labels = [s["label"] for s in math_think.SAMPLE_COMPLETIONS]
    totals = dict(zip(labels, weighted_totals(runs, len(labels))))
    for label in ("right, think then box", "right, written 0.75", "right, template opened <think>"):
        assert totals[label] == pytest.approx(2.6), label
    assert totals["right, rambling"] == pytest.approx(2.5)  # 600 words: the length term gives nothing
    assert totals["no think block"] == totals["two think blocks"] == pytest.approx(2.1)
    assert totals["wrong answer"] == pytest.approx(0.6)
    assert totals["boxed only in thinking"] == pytest.approx(0.35) and totals["empty"] == pytest.approx(0.1)


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_an_answer_column_wins_and_rows_without_gold_are_dropped_and_counted(tmp_path, capsys):
    rows = [
        {"problem": "Half of 1?", "solution": "It is $\\boxed{\\dfrac{1}{2}}$.", "answer": "\\frac{1}{2}"},  # MATH-500
        {"problem": "Half of 3?", "solution": "Half of 3 is $\\boxed{\\frac{3}{2}}$.", "answer": ""},
        {"problem": "Nested?", "solution": "$\\boxed{\\frac{1}{\\sqrt{2}}}$", "answer": None},
        {"problem": "No gold.", "solution": "I cannot tell.", "answer": None},
    ]
    write_rows(tmp_path / "p.jsonl", rows)
    dataset = math_think.prepare("test", str(tmp_path / "p.jsonl"))
    assert dataset["answer"] == ["\\frac{1}{2}", "\\frac{3}{2}", "\\frac{1}{\\sqrt{2}}"]
    assert dataset["reasoning"][1] == "Half of 3 is $\\frac{3}{2}$."
    assert "dropped 1 of 4 problems without a gold answer" in capsys.readouterr().out


def test_a_table_without_gold_is_refused(tmp_path):
    write_rows(tmp_path / "q.jsonl", [{"problem": "1 + 1?", "hint": "count"}])
    with pytest.raises(KitError, match="has neither 'answer' nor 'solution'"):
        math_think.prepare("train", str(tmp_path / "q.jsonl"))
    write_rows(tmp_path / "r.jsonl", [{"problem": "1 + 1?", "solution": "two"}])
    with pytest.raises(KitError, match="no problem has a gold answer"):
        math_think.prepare("train", str(tmp_path / "r.jsonl"))
