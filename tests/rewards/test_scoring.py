import pytest

from kit.errors import KitError
from kit.rewards import answer_correct, soft_xml_format
from kit.rewards.scoring import Passes, Scoring
from tests.conftest import chat

FORMAT = soft_xml_format()


def counted(values):
    """A reward returning `values` (one per completion), counting its calls."""

    def reward(completions, **kwargs):
        reward.calls += 1
        return list(values)

    reward.calls = 0
    return reward


def test_a_tuple_needs_every_reward_at_full_marks():
    right, formatted = counted([1.0, 1.0, 0.0, 0.999]), counted([1.0, 0.0, 1.0, 1.0])
    judged = Scoring(strict=(right, formatted), lenient=right).judge([chat("x")] * 4, {})
    assert judged.strict == [True, False, False, False]
    assert judged.lenient == [True, True, False, False]  # 0.999 is not full marks
    assert judged.formatted is None


def test_passes_sets_a_threshold_and_none_never_passes():
    fuzzy = counted([0.85, 0.5, None, 0.8])
    judged = Scoring(strict=Passes(fuzzy, 0.8), lenient=Passes(fuzzy, 0.0)).judge([chat("x")] * 4, {})
    assert judged.strict == [True, False, False, True]
    assert judged.lenient == [True, True, False, True]  # None: the reward does not apply, so not right


def test_each_reward_runs_once_per_batch_and_computed_values_are_reused():
    right, formatted = counted([1.0, 0.0]), counted([1.0, 1.0])
    scoring = Scoring(strict=(right, formatted), lenient=right, formatted=formatted)
    judged = scoring.judge([chat("a"), chat("b")], {}, computed={right: [0.0, 1.0]})
    assert right.calls == 0 and formatted.calls == 1
    assert judged == ([False, True], [False, True], [True, True])


def test_verdict_judges_one_reply_against_its_row_with_the_training_rewards():
    scoring = Scoring(strict=(answer_correct, FORMAT), lenient=answer_correct, formatted=FORMAT)
    formatted = "<reasoning>\n48 + 24\n</reasoning>\n<answer>\n72\n</answer>\n"
    assert tuple(scoring.verdict(formatted, {"answer": "72"})) == (True, True, True)
    assert tuple(scoring.verdict("<answer>72</answer>", {"answer": "72"})) == (False, True, False)
    assert tuple(scoring.verdict(formatted, {"answer": "71"})) == (False, False, True)


def test_columns_reach_the_rewards_as_in_training():
    seen = {}

    def reads(completions, answer, prompts, **kwargs):
        seen.update(answer=answer, prompts=prompts)
        return [1.0]

    Scoring(strict=reads, lenient=reads).verdict("x", {"answer": "7", "prompt": [{"role": "user", "content": "q"}]})
    assert seen == {"answer": ["7"], "prompts": [[{"role": "user", "content": "q"}]]}


@pytest.mark.parametrize("judge", [lambda text, row: True, "answer_correct", ()])
def test_a_judge_that_is_not_a_reward_is_refused_when_the_recipe_is_read(judge):
    with pytest.raises(KitError, match="reward"):
        Scoring(strict=judge, lenient=answer_correct)


def test_a_reward_that_raises_in_evaluation_is_one_clear_message():
    def broken(completions, **kwargs):
        raise ValueError("no")

    with pytest.raises(KitError, match="reward 'broken' raised ValueError: no .* in evaluation"):
        Scoring(strict=broken, lenient=broken).verdict("x", {})
