import pytest

from kit.recipes import digit_sum


def test_splits_are_disjoint_and_cover_every_triple():
    train, test = set(digit_sum.triples("train")), set(digit_sum.triples("test"))
    assert len(test) == 200 and len(train) == 800 and not train & test
    assert len(train | test) == 1000


def test_rows_and_targets():
    rows = digit_sum.prepare("test", None)
    first = rows[0]
    a, b, c = digit_sum.triples("test")[0]
    assert first["prompt"] == [{"role": "user", "content": f"What is {a} plus {b} plus {c}?"}]
    assert first["answer"] == str(a + b + c)
    assert digit_sum.sft_target(first) == f"<answer>{a + b + c}</answer>"


def test_scoring():
    row = {"answer": "13"}
    judge = digit_sum.EVAL
    assert tuple(judge.verdict("<answer>13</answer>", row)) == (True, True, True)
    assert tuple(judge.verdict("13", row)) == (False, True, False)
    assert tuple(judge.verdict("<answer>13</answer> extra", row)) == (False, True, False)
    assert not judge.verdict("<answer>12</answer>", row).lenient


def test_digit_sum_offers_closeness_switched_off():
    from kit.recipes import load_recipe

    recipe = load_recipe("digit_sum")
    assert "answer_close" in recipe.rewards.names
    assert "answer_close" not in recipe.rewards.reweighted({}).names
    assert recipe.rewards.reweighted({"answer_close": 0.5}).weights == [1.0, 0.2, 0.5]


def every_reward(completion: str, gold: str) -> dict:
    """Each reward of the bundle, closeness switched on as a config may, on one completion."""
    from kit.recipes import load_recipe

    bundle = load_recipe("digit_sum").rewards.reweighted({"answer_close": 0.5})
    return {r.name: r.fn([[{"role": "assistant", "content": completion}]], answer=[gold])[0] for r in bundle.rewards}


@pytest.mark.parametrize("copied", ["<answer>4+7+2</answer>", "<answer>4 + 7 + 2</answer>", "<answer>(4+7)+2</answer>",
                                    "<answer>\\boxed{4+7+2}</answer>", "<answer>26/2</answer>"])
def test_copying_the_question_earns_nothing(copied):
    """The question's sum is an expression equal to the gold: paying it pays for not adding (issue 43)."""
    assert every_reward(copied, "13") == {"answer_correct": 0.0, "answer_format": 0.0, "answer_close": 0.0}
    assert tuple(digit_sum.EVAL.verdict(copied, {"answer": "13"})) == (False, False, False)


def test_the_number_is_paid():
    assert every_reward("<answer>13</answer>", "13") == {"answer_correct": 1.0, "answer_format": 1.0,
                                                         "answer_close": 1.0}
    assert every_reward("<answer>13.0</answer>", "13")["answer_correct"] == 1.0  # the number, not the format


def test_the_copying_sample_is_labelled_unpaid():
    sample = next(s for s in digit_sum.SAMPLE_COMPLETIONS if "unpaid" in s["label"])
    assert set(every_reward(sample["completion"], sample["answer"]).values()) == {0.0}
