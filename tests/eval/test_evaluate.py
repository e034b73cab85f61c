import json

from datasets import Dataset

from kit.eval.evaluate import EvalResult, format_table, score, write_json
from kit.recipe import Recipe, default_scoring
from kit.recipes import load_recipe
from kit.rewards import RewardBundle

GOLD = "72"
OUTPUTS = {
    "right, formatted": "<reasoning>\n48 + 24\n</reasoning>\n<answer>\n72\n</answer>",
    "right, unformatted": "She sold 48 + 24 = 72 clips.",
    "right in a box": "so the total is \\boxed{72}",
    "wrong, formatted": "<reasoning>\n48 + 48\n</reasoning>\n<answer>\n96\n</answer>",
    "formatted, answer text": "<reasoning>\nhmm\n</reasoning>\n<answer>\nseventy-two\n</answer>",
}


def rows(n):
    return Dataset.from_list([{"prompt": [{"role": "user", "content": f"q{i}"}], "answer": GOLD} for i in range(n)])


def test_strict_needs_format_and_answer_lenient_only_the_answer(tiny_tokenizer):
    recipe = load_recipe("gsm8k")
    judged = {label: tuple(recipe.scoring.verdict(text, {"answer": GOLD})) for label, text in OUTPUTS.items()}
    assert judged == {
        "right, formatted": (True, True, True),
        "right, unformatted": (False, True, False),
        "right in a box": (False, True, False),
        "wrong, formatted": (False, False, True),
        "formatted, answer text": (False, False, True),
    }


def test_score_aggregates(tiny_tokenizer):
    texts = list(OUTPUTS.values())
    result = score(load_recipe("gsm8k"), rows(len(texts)), texts, tiny_tokenizer, "model")
    assert result.n == 5
    assert result.strict_accuracy == 1 / 5 and result.lenient_accuracy == 3 / 5 and result.format_compliance == 3 / 5
    assert result.rewards["answer_correct"] == 1 / 5 and set(result.rewards) == set(load_recipe("gsm8k").rewards.names)
    assert result.mean_length > 0 and len(result.samples) == 5


def test_default_scoring_uses_the_top_weighted_reward():
    def says_yes(completions, **kwargs):
        return [float("yes" in c[-1]["content"] if isinstance(c, list) else "yes" in c) for c in completions]

    def minor(completions, **kwargs):
        return [1.0 for _ in completions]

    recipe = Recipe(name="t", prepare=None, rewards=RewardBundle((minor, 0.1), (says_yes, 1.0)))
    scoring = default_scoring(recipe.rewards)
    assert scoring.verdict("yes", {}).strict and not scoring.verdict("no", {}).lenient and scoring.formatted is None


def test_table_and_json(tmp_path):
    a = EvalResult("before", 10, 0.1, 0.2, 0.5, {"answer_correct": 0.1}, 30.0)
    b = EvalResult("after", 10, 0.6, 0.7, 1.0, {"answer_correct": 0.6}, 25.5)
    table = format_table([a, b]).splitlines()
    assert table[0].split() == ["n", "=", "10", "before", "after"]
    assert table[1].split() == ["strict", "accuracy", "10.0%", "60.0%"]
    write_json(tmp_path / "eval.json", [a, b], split="test")
    saved = json.loads((tmp_path / "eval.json").read_text())
    assert saved["split"] == "test" and [r["name"] for r in saved["results"]] == ["before", "after"]
