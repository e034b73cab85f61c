from kit.recipes import addition, load_recipe


def test_splits_are_disjoint_and_cover_every_pair():
    train, test = set(addition.pairs("train")), set(addition.pairs("test"))
    assert len(test) == 200 and len(train) == 200 and not train & test
    assert len(train | test) == 400 and max(max(p) for p in train | test) == 19


def test_rows_targets_and_rewards():
    recipe = load_recipe("addition")
    rows = recipe.prepare("test", None)
    a, b = addition.pairs("test")[0]
    assert rows[0]["prompt"] == [{"role": "user", "content": f"What is {a} plus {b}?"}]
    assert rows[0]["answer"] == str(a + b) and recipe.sft_target(rows[0]) == f"<answer>{a + b}</answer>"
    assert recipe.rewards.names == ["answer_correct", "answer_format", "answer_close"]
    assert recipe.scoring.verdict(f"<answer>{a + b}</answer>", rows[0]).strict


def test_sample_file_reads_back(tmp_path):
    path = tmp_path / "train.jsonl"
    addition.write_sample(path, "train")
    assert addition.prepare("train", str(path))["answer"] == addition.prepare("train", None)["answer"]


def test_the_question_copied_earns_nothing():
    """'<answer>14+9</answer>' for "What is 14 plus 9?" equals 23 and computes nothing (issue 43)."""
    bundle = load_recipe("addition").rewards.reweighted({"answer_close": 0.5})
    for copied in ("<answer>14+9</answer>", "<answer>14 + 9</answer>", "<answer>9+14</answer>"):
        completion = [{"role": "assistant", "content": copied}]
        assert [r.fn([completion], answer=["23"]) for r in bundle.rewards] == [[0.0]] * 3, copied
    right = [{"role": "assistant", "content": "<answer>23</answer>"}]
    assert [r.fn([right], answer=["23"]) for r in bundle.rewards] == [[1.0]] * 3
