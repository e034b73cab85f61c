from recipes import digit_sum


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
    assert judge.strict("<answer>13</answer>", row) and judge.formatted("<answer>13</answer>", row)
    assert not judge.strict("13", row) and judge.lenient("13", row)
    assert not judge.strict("<answer>13</answer> extra", row) and judge.lenient("<answer>13</answer> extra", row)
    assert not judge.lenient("<answer>12</answer>", row)


def test_digit_sum_offers_closeness_switched_off():
    from kit.recipe import load_recipe

    recipe = load_recipe("digit_sum")
    assert "answer_close" in recipe.rewards.names
    assert "answer_close" not in recipe.rewards.reweighted({}).names
    assert recipe.rewards.reweighted({"answer_close": 0.5}).weights == [1.0, 0.2, 0.5]
