"""The learnability report's maths and words, on made-up groups (kit.checks.learnability)."""

from __future__ import annotations

import pytest

from kit.checks.learnability import TOTAL, learnability

WEIGHTS = {"correct": 1.0, "format": 0.2}


def test_groups_that_all_score_zero_have_nothing_to_learn_from():
    scores = {"correct": [[0.0] * 4] * 3, "format": [[0.0] * 4] * 3}
    report = learnability(scores, WEIGHTS, cut=[False] * 12)
    assert report.alike == 3 and not report.learns
    assert report.verdict().startswith("learnability: 3 of 3 groups score alike on correct: GRPO has nothing to "
                                       "learn from; warm start with SFT (`stages: [sft, grpo]`)")
    assert "raise grpo.num_generations (now 4)" in report.verdict()


def test_one_reward_that_differs_gives_the_total_a_signal():
    """format differs in one group: the weighted total differs there too; correct stays alike in every group."""
    scores = {"correct": [[0.0] * 4] * 3, "format": [[0.0] * 4, [0.0, 1.0, 0.0, 0.0], [0.0] * 4]}
    report = learnability(scores, WEIGHTS, cut=[False] * 12)
    assert report.rewards["correct"].alike == 3
    assert report.rewards["format"].alike == 2
    assert report.alike == 2
    assert report.rewards["format"].mean == pytest.approx(1 / 12)
    assert report.rewards["format"].within == pytest.approx((0 + 0.4330127 + 0) / 3)
    assert report.easy_only and not report.learns  # the signal is the light reward's alone


def test_most_groups_alike_is_little_to_learn_from_named_by_the_worst_reward():
    groups = [[0.0] * 4] * 9 + [[0.0, 1.0, 1.0, 0.0]]
    report = learnability({"correct": groups, "format": [[1.0] * 4] * 10}, WEIGHTS, cut=[False] * 40)
    assert report.alike == 9 and not report.learns
    assert "9 of 10 groups score alike on correct: GRPO has little to learn from" in report.verdict()


def test_enough_groups_that_differ_is_a_signal():
    groups = [[0.0, 1.0, 0.0, 0.0]] * 5 + [[1.0] * 4]
    report = learnability({"correct": groups}, {"correct": 1.0}, cut=[False] * 24)
    assert report.learns
    assert report.verdict() == "learnability: 5 of 6 groups differ in reward: GRPO has something to learn from"


def test_every_completion_at_the_ceiling_asks_for_harder_rows():
    report = learnability({"correct": [[1.0] * 4] * 2}, {"correct": 1.0}, cut=[False] * 8, ceilings={"correct": 1.0})
    assert report.verdict().endswith("the rows are too easy for this model: use harder rows")


def test_a_warm_started_model_is_told_to_warm_start_longer():
    report = learnability({"correct": [[0.0] * 2] * 2}, {"correct": 1.0}, cut=[False] * 4, warm_started=True)
    assert "warm start longer (sft.max_steps)" in report.verdict()


def test_the_total_is_trls_weighted_sum_of_the_rewards_that_apply():
    """None is TRL's NaN: left out of the sum (nansum), so a completion no reward applies to totals 0."""
    scores = {"correct": [[None, 1.0]], "format": [[None, 0.0]]}
    report = learnability(scores, WEIGHTS, cut=[False, False])
    assert report.rewards[TOTAL].mean == pytest.approx(0.5)
    assert report.alike == 0
    assert report.rewards["correct"].alike == 1  # one value that applies: nothing to compare


def test_a_reward_that_applies_to_nothing_is_said_so():
    report = learnability({"correct": [[None] * 3], "format": [[0.0, 1.0, 0.0]]}, WEIGHTS, cut=[False] * 3)
    assert "  correct: applied to no completion" in report.lines()


def test_the_length_cap_and_tool_calls_are_shares_of_completions():
    report = learnability({"correct": [[0.0, 1.0]] * 2}, {"correct": 1.0}, cut=[True, True, True, False],
                          tool_calling=[False] * 4, max_tokens=32)
    lines = report.lines()
    assert "  75% of completions cut at grpo.max_completion_length (32 tokens): raise it, or ask for shorter " \
           "answers (a cut answer scores as a wrong one)" in lines
    assert any(line.startswith("  0% of completions make a tool call that parses: the model does not use its tools")
               for line in lines)
    record = report.record()
    assert record["cut_at_length_cap"] == 0.75 and record["tool_calling"] == 0.0
    assert record["groups_alike"] == 0 and record["learns"] is True
    assert record["rewards"]["correct"] == {"groups_alike": 0, "mean": 0.5, "std": 0.5, "std_within_groups": 0.5}


def test_groups_that_differ_only_on_a_light_reward_learn_the_easy_reward_alone():
    """The tool demo's format-only case: no reply called the tool, so exact_match is 0 in every group while the
    format reward differs: the total differs, but GRPO would learn the format alone."""
    weights = {"exact_match": 1.0, "answer_format": 0.2, "tool_ran": 0.2}
    scores = {"exact_match": [[0.0] * 8] * 6, "tool_ran": [[0.0] * 8] * 6,
              "answer_format": [[0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]] * 6}
    report = learnability(scores, weights, cut=[False] * 48)
    assert report.alike == 0 and report.easy_only and not report.learns
    assert report.verdict().startswith(
        "learnability: 6 of 6 groups score alike on exact_match, the heaviest reward (x1); they differ only on "
        "answer_format (x0.2): GRPO would learn the easy reward alone; warm start with SFT")
    assert report.record()["easy_reward_only"] is True and report.record()["learns"] is False


def test_rewards_of_equal_weight_have_no_easy_one():
    scores = {"correct": [[0.0] * 4] * 5, "format": [[0.0, 1.0, 0.0, 1.0]] * 5}
    report = learnability(scores, {"correct": 1.0, "format": 1.0}, cut=[False] * 20)
    assert report.learns and not report.easy_only


def test_a_heavy_reward_that_differs_in_enough_groups_is_a_signal_of_its_own():
    correct = [[0.0, 1.0, 0.0, 0.0]] * 2 + [[0.0] * 4] * 3  # differs in 2 of 5 groups: 3 alike, under 80%
    report = learnability({"correct": correct, "format": [[0.0, 1.0, 1.0, 0.0]] * 5}, WEIGHTS, cut=[False] * 20)
    assert report.learns and not report.easy_only


def test_the_heaviest_reward_earned_everywhere_asks_for_harder_rows():
    scores = {"correct": [[1.0] * 4] * 3, "format": [[0.0, 1.0, 0.0, 1.0]] * 3}
    report = learnability(scores, WEIGHTS, cut=[False] * 12, ceilings={"correct": 1.0, "format": 1.0})
    assert report.easy_only and report.verdict().endswith("the rows are too easy for this model: use harder rows")
