"""The gold-answer check before training (kit.checks.gold_answers): a correctness reward that cannot pay a right answer
is said before a step is trained. The guide's recipe and data (tests/rewards/guide/, as /tmp/guide/ had them) keep the
answer column as int64 and compare it with text; every shipped recipe passes on its own sample data."""

import dataclasses
from pathlib import Path

import pytest

from kit.checks.gold_answers import check_gold_answers, correctness_reward
from kit.config import DataConfig
from kit.data import load_rows
from kit.errors import KitError
from kit.recipes import guess_number, known_recipes, load_recipe
from kit.rewards import AdaptiveWeight, RewardBundle, row_optional
from kit.user_code import UserCodeError
from tests.test_user_code import guide_recipe

GUIDE = Path(__file__).parent.parent / "rewards" / "guide"
# The fix the check asks for: the column cast to text (a map returning str(x["answer"]) keeps int64, see below).
TEXT_ANSWERS = [("from datasets import load_dataset", "from datasets import Value, load_dataset"),
                ('split="train")\n', 'split="train").cast_column("answer", Value("string"))\n')]
FIX = ("make it text at the end of prepare: rows = rows.cast_column('answer', datasets.Value('string')) (a map "
       "returning str(x['answer']) is not enough: datasets casts the text back to int64)")


def guide(tmp_path: Path, *edits: tuple[str, str]):
    """(the guide's recipe with `edits` (old, new) made, its training rows from the guide's data)."""
    _, recipe = guide_recipe(tmp_path, *edits)
    return recipe, load_rows(recipe, DataConfig(path=str(GUIDE / "arith.jsonl")))


def without_worked_answers(recipe):
    return dataclasses.replace(recipe, sft_target=None)


@pytest.fixture(scope="module")
def shipped_rows():
    """{name: (recipe, its sample training rows)} for every shipped recipe."""
    recipes = {name: load_recipe(name) for name in known_recipes()}
    return {name: (recipe, load_rows(recipe, DataConfig(path="sample"))) for name, recipe in recipes.items()}


# Paid by a judge or a reward model, with no one right answer to write as a worked answer: nothing to score.
NO_WORKED_ANSWERS = {"concise_helpful", "helpful_preference"}


@pytest.mark.parametrize("name", sorted(set(known_recipes()) - NO_WORKED_ANSWERS))
def test_every_shipped_recipe_pays_its_own_worked_answers(name, shipped_rows):
    recipe, rows = shipped_rows[name]
    gold = check_gold_answers(recipe, rows, recipe.rewards.reweighted({}))
    assert (gold.problem, gold.warnings) == (None, [])
    reward = correctness_reward(recipe.rewards).name
    assert gold.summary.startswith(f"gold answers: {reward} pays the recipe's worked answer on 8 of 8 training rows")


@pytest.mark.parametrize("name", sorted(NO_WORKED_ANSWERS))
def test_a_judged_recipe_has_no_worked_answers_and_the_check_says_so(name, shipped_rows):
    recipe, rows = shipped_rows[name]
    gold = check_gold_answers(recipe, rows, recipe.rewards)
    assert recipe.sft_target is None and gold.problem is None
    assert gold.summary.startswith("gold answers: no sft_target (a worked answer) to score")


@pytest.mark.parametrize("name", known_recipes())
def test_every_shipped_recipe_passes_without_its_worked_answers_too(name, shipped_rows):
    """The numeric-column heuristic raises no false alarm: guess_number's `secret` is int64, and its reward reads it
    as text (str(secret))."""
    recipe, rows = shipped_rows[name]
    gold = check_gold_answers(without_worked_answers(recipe), rows, recipe.rewards)
    assert (gold.problem, gold.warnings) == (None, [])
    assert gold.summary.startswith("gold answers: no sft_target (a worked answer) to score; ")


def test_guess_numbers_int_secret_is_seen_to_be_read_as_text(shipped_rows):
    recipe, rows = shipped_rows["guess_number"]
    gold = check_gold_answers(without_worked_answers(recipe), rows, recipe.rewards)
    assert gold.summary == ("gold answers: no sft_target (a worked answer) to score; names_the_number reads 'secret' "
                            "(int64) and pays it written as text; not checked, as the check plays no environment: "
                            "HiddenNumber (the environment's reward)")


def test_the_guides_int64_answers_are_refused_with_the_fix(tmp_path):
    recipe, rows = guide(tmp_path)
    assert rows.features["answer"].dtype == "int64"
    gold = check_gold_answers(recipe, rows, recipe.rewards)
    assert gold.summary == "gold answers: correctness_reward never pays the recipe's worked answer"
    assert gold.problem == (
        "reward 'correctness_reward' never pays the recipe's own worked answers (sft_target) on 8 training rows: "
        f"column 'answer' is int64 while the completions are text (as text, it pays 8 of 8); {FIX}")
    with pytest.raises(KitError, match="^reward 'correctness_reward' never pays"):
        gold.raise_problem()


def test_the_guide_with_text_answers_passes(tmp_path):
    recipe, rows = guide(tmp_path, *TEXT_ANSWERS)
    gold = check_gold_answers(recipe, rows, recipe.rewards)
    assert gold.summary == "gold answers: correctness_reward pays the recipe's worked answer on 8 of 8 training rows"
    assert (gold.problem, gold.warnings) == (None, [])
    gold.raise_problem()  # nothing to raise


def test_a_map_returning_str_keeps_int64_and_is_still_refused(tmp_path):
    """What a user writes first, and the brief's fix: datasets casts the text back to the column's int64."""
    recipe, rows = guide(tmp_path, ('"answer": x["answer"],', '"answer": str(x["answer"]),'))
    assert rows.features["answer"].dtype == "int64"
    assert check_gold_answers(recipe, rows, recipe.rewards).problem.endswith(FIX)


def test_without_worked_answers_the_int64_answers_are_a_warning(tmp_path):
    recipe, rows = guide(tmp_path)
    gold = check_gold_answers(without_worked_answers(recipe), rows, recipe.rewards)
    assert gold.problem is None
    assert gold.warnings == [
        "reward 'correctness_reward' reads column 'answer' as int64 and compares it with text: it paid none of 8 "
        f"training rows' values written out ('<answer>27</answer>', ...) and pays them once the column is text; {FIX}"]
    fixed, rows = guide(tmp_path, *TEXT_ANSWERS)
    gold = check_gold_answers(without_worked_answers(fixed), rows, fixed.rewards)
    assert (gold.warnings, gold.summary) == ([], "gold answers: no sft_target (a worked answer) to score; no reward "
                                                 "takes a numeric column by name")


def test_a_reward_that_compares_numbers_as_numbers_is_not_warned_about(tmp_path):
    recipe, rows = guide(tmp_path, ("2.0 if ans == gt", "2.0 if ans is not None and ans.isdigit() and int(ans) == gt"))
    gold = check_gold_answers(without_worked_answers(recipe), rows, recipe.rewards)
    assert gold.warnings == []
    assert gold.summary.endswith("correctness_reward reads 'answer' (int64) and pays it written as text")
    assert check_gold_answers(recipe, rows, recipe.rewards).problem is None


def test_an_answer_form_the_check_does_not_write_is_said_to_be_unknown_not_warned(tmp_path):
    """A numeric column with a reward the check's phrasings never satisfy: it cannot tell, and says so."""
    recipe, rows = guide(tmp_path, (r'r"<answer>(.*?)</answer>"', r'r"FINAL=(\d+);"'))
    gold = check_gold_answers(without_worked_answers(recipe), rows, recipe.rewards)
    assert gold.warnings == []
    assert gold.summary.endswith("correctness_reward reads 'answer' (int64) and pays none of the check's ways of "
                                 "writing it, as a number or as text: the check cannot tell")


def test_worked_answers_in_another_form_than_the_reward_reads_are_refused(tmp_path):
    recipe, rows = guide(tmp_path, *TEXT_ANSWERS, ("<answer>\\n{row['answer']}\\n</answer>", "{row['answer']}"))
    gold = check_gold_answers(recipe, rows, recipe.rewards)
    assert gold.problem == (
        "reward 'correctness_reward' never pays the recipe's own worked answers (sft_target) on 8 training rows (it "
        "gave 0.0, 0.0, 0.0, ...; it reads 'answer' (string)): sft_target writes answers in another form "
        "than the reward reads, or the reward is wrong; the first: '<reasoning>\\nWorking it out.\\n</reasoning>\\n27'"
        " for the row with answer='27'")


def test_a_reward_that_raises_on_the_worked_answers_is_the_problem_in_one_line(tmp_path):
    recipe, rows = guide(tmp_path, ("return match.group(1).strip() if match else None", "return int(match)"))
    gold = check_gold_answers(recipe, rows, recipe.rewards)
    assert gold.summary == "gold answers: correctness_reward raised on the recipe's worked answers"
    assert gold.problem.startswith("reward 'correctness_reward' raised TypeError: int() argument must be")
    assert "of the recipe's worked answers (sft_target)" in gold.problem and "\n" not in gold.problem
    with pytest.raises(UserCodeError) as caught:
        gold.raise_problem()
    assert isinstance(caught.value.__cause__, TypeError)  # what -v shows


def test_a_reward_that_raises_without_worked_answers_is_a_warning(tmp_path):
    recipe, rows = guide(tmp_path, ("return match.group(1).strip() if match else None", "return int(match)"))
    gold = check_gold_answers(without_worked_answers(recipe), rows, recipe.rewards)
    assert gold.problem is None
    assert [w.split(":")[:2] for w in gold.warnings] == [["gold-answer check", " reward 'correctness_reward' raised "
                                                                                "TypeError"]]


def test_an_sft_target_that_raises_leaves_the_check_undone_without_stopping_the_run(tmp_path):
    recipe, rows = guide(tmp_path, ("return f\"<reasoning>", "return row['missing'] + f\"<reasoning>"))
    gold = check_gold_answers(recipe, rows, recipe.rewards)
    assert gold.problem is None
    assert gold.summary.startswith("gold answers: not checked: sft_target() raised KeyError: 'missing' on the row with")


def test_the_correctness_reward_is_the_top_weighted_one_that_reads_a_column(tmp_path):
    recipe, rows = guide(tmp_path)
    assert correctness_reward(recipe.rewards).name == "correctness_reward"  # tied with format_reward
    heavier_format = recipe.rewards.reweighted({"format_reward": 3.0})
    assert correctness_reward(heavier_format).name == "correctness_reward"
    assert check_gold_answers(recipe, rows, heavier_format).problem.startswith("reward 'correctness_reward'")


def test_an_adaptive_reward_is_checked_without_moving_its_scale(tmp_path):
    recipe, rows = guide(tmp_path)
    adaptive = recipe.rewards.with_adaptive(["correctness_reward"])
    gold = check_gold_answers(recipe, rows, adaptive)
    assert gold.problem.startswith("reward 'correctness_reward' never pays")
    scaled = adaptive.rewards[0].fn
    assert isinstance(scaled, AdaptiveWeight) and (scaled.multiplier, len(scaled.history)) == (1.0, 0)


def test_a_reward_that_does_not_apply_to_the_rows_checked_is_not_checked(tmp_path):
    recipe, rows = guide(tmp_path)

    def correctness_reward(completions, answer, **kwargs):
        return [None for _ in completions]

    bundle = RewardBundle((row_optional(correctness_reward), 1.0))
    gold = check_gold_answers(recipe, rows, bundle)
    assert (gold.problem, gold.summary) == (None, "gold answers: not checked: correctness_reward does not apply to the "
                                                  "8 training rows checked")


def test_a_reward_that_reads_the_environment_is_left_out_and_said(shipped_rows):
    recipe, rows = shipped_rows["guess_number"]

    def solved_it(completions, secret, environments, **kwargs):
        return [float(e.solved) for e in environments]

    bundle = RewardBundle((solved_it, 1.0), (guess_number.names_the_number, 0.5))
    gold = check_gold_answers(recipe, rows, bundle)
    assert (gold.problem, gold.summary) == (None, "gold answers: not checked: solved_it reads the rollout's "
                                                  "environment, which the check does not play")
    gold = check_gold_answers(without_worked_answers(recipe), rows, bundle)
    assert gold.summary.endswith("not checked, as the check plays no environment: solved_it, HiddenNumber (the "
                                 "environment's reward)")
    assert "names_the_number reads 'secret' (int64) and pays it written as text" in gold.summary


def test_a_reward_paying_less_for_an_empty_reply_than_for_a_wrong_one_is_judged_against_the_empty_one(tmp_path):
    """-1 for no answer, 0 for a wrong one: 0 is not its minimum, so the check cannot call it never paying."""
    recipe, rows = guide(tmp_path, ("2.0 if ans == gt else 0.0", "(2.0 if ans == gt else 0.0) if ans else -1.0"))
    assert check_gold_answers(recipe, rows, recipe.rewards).problem is None
