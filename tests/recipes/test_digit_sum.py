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
