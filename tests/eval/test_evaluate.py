import json

from datasets import Dataset

from kit.digest import shown_keys
from kit.eval.evaluate import EvalResult, format_table, paired, score, write_json
from kit.eval.intervals import paired_gain, wilson
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
    assert saved["results"][0]["intervals"]["strict_accuracy"] == [round(x, 4) for x in wilson(1, 10)]
    assert saved["gains"] == []  # no per-prompt outcomes: nothing to pair
    assert [EvalResult.from_json(r) for r in saved["results"]] == [a, b]


def test_each_prompts_outcome_is_kept_by_its_key(tiny_tokenizer):
    texts = list(OUTPUTS.values())
    result = score(load_recipe("gsm8k"), rows(len(texts)), texts, tiny_tokenizer, "model")
    assert result.outcomes["strict"] == [True, False, False, False, False]
    assert result.outcomes["lenient"] == [True, True, True, False, False]
    assert result.outcomes["format"] == [True, False, False, True, True]
    assert result.outcomes["keys"] == shown_keys(rows(5)) and len(set(result.outcomes["keys"])) == 5


def outcomes(keys, strict):
    return {"keys": keys, "strict": strict, "lenient": strict, "format": None}


def test_the_table_gives_each_proportion_its_interval_and_each_gain_its_paired_test():
    keys = [f"k{i}" for i in range(10)]
    a = EvalResult("before", 10, 0.1, 0.1, None, {}, 30.0, outcomes=outcomes(keys, [True] + [False] * 9))
    b = EvalResult("after", 10, 0.6, 0.6, None, {}, 25.5, outcomes=outcomes(keys, [True] * 6 + [False] * 4))
    table = format_table([a, b]).splitlines()
    low, high = wilson(1, 10)
    assert table[2].split() == ["95%", "interval", f"[{100 * low:.0f},", f"{100 * high:.0f}]", "[31,", "83]"]
    assert table[5].split() == ["format", "compliance", "-", "-"] and table[6].split() == ["95%", "interval", "-", "-"]
    gain = paired_gain(a.outcomes["strict"], b.outcomes["strict"])
    assert f"strict accuracy, after vs before: {gain.words()}" in table
    assert "5 prompts better, 0 worse" in gain.words() and gain.p == 2 / 2 ** 5


def test_eval_json_keeps_the_outcomes_and_the_gains_tests(tmp_path):
    keys = [f"k{i}" for i in range(10)]
    a = EvalResult("before", 10, 0.1, 0.1, None, {}, 30.0, outcomes=outcomes(keys, [True] + [False] * 9))
    b = EvalResult("after", 10, 0.6, 0.6, None, {}, 25.5, outcomes=outcomes(keys, [True] * 6 + [False] * 4))
    write_json(tmp_path / "eval.json", [a, b])
    saved = json.loads((tmp_path / "eval.json").read_text())
    assert saved["results"][1]["outcomes"]["strict"] == [True] * 6 + [False] * 4
    assert saved["results"][1]["intervals"]["format_compliance"] is None
    strict = saved["gains"][0]
    assert (strict["proportion"], strict["improved"], strict["worsened"], strict["mcnemar_p"]) == \
        ("strict_accuracy", 5, 0, 2 / 2 ** 5)
    assert [g["proportion"] for g in saved["gains"]] == ["strict_accuracy", "lenient_accuracy"]
    assert [EvalResult.from_json(r) for r in saved["results"]] == [a, b]


def test_gains_pair_prompts_by_key_whatever_their_order_and_skip_prompts_scored_once():
    a = EvalResult("base", 3, 1 / 3, 1 / 3, None, {}, 1.0, outcomes=outcomes(["x", "y", "z"], [True, False, False]))
    b = EvalResult("trained", 3, 2 / 3, 2 / 3, None, {}, 1.0, outcomes=outcomes(["w", "y", "x"], [False, True, True]))
    gain = paired(a, b, "strict")
    assert (gain.n, gain.both, gain.improved, gain.worsened) == (2, 1, 1, 0)


def test_a_repeated_prompt_is_paired_copy_by_copy():
    a = EvalResult("base", 2, 0.5, 0.5, None, {}, 1.0, outcomes=outcomes(["x", "x"], [True, False]))
    b = EvalResult("trained", 2, 0.5, 0.5, None, {}, 1.0, outcomes=outcomes(["x", "x"], [False, True]))
    assert (paired(a, b, "strict").improved, paired(a, b, "strict").worsened) == (1, 1)


def test_results_from_before_outcomes_were_kept_still_load_and_say_their_gain_is_untested(tmp_path):
    old = {"name": "before", "n": 10, "strict_accuracy": 0.1, "lenient_accuracy": 0.2, "format_compliance": 0.5,
           "rewards": {}, "mean_length": 3.0}  # an eval.json result as the kit wrote it before
    later = EvalResult("after", 10, 0.6, 0.7, 1.0, {}, 2.0, outcomes=outcomes(["k"] * 10, [True] * 10))
    table = format_table([EvalResult(**old), later])
    assert ("strict accuracy, after vs before: +50.0 points (untested: no per-prompt outcomes of the same prompts "
            "to pair)") in table
