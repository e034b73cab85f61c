import contextlib
import io
import json
import subprocess
import sys

import pytest

from kit.checks.rewards_check import load_samples, print_report, run_bundle, run_one
from kit.errors import KitError
from kit.recipes import load_recipe
from kit.rewards.bundle import Reward, RewardBundle
from kit.rewards.text import completion_text
from tests.conftest import REPO, chat


def rewards_check(*args):
    return subprocess.run([sys.executable, "-m", "kit", "rewards", "check", *args], check=False, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_gsm8k_check_prints_the_table():
    result = rewards_check("gsm8k")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["sample", "answer_correct", "x2"] and lines[0].rstrip().endswith("total")
    perfect = next(line for line in lines if line.startswith("right, strict format"))
    assert perfect.split()[-1] == "4.00"
    assert "no warnings" in result.stdout


def constant(completions, **kwargs):
    return [1.0 for _ in completions]


def boom(completions, **kwargs):
    raise ValueError("bad regex")


def too_big(completions, **kwargs):
    return [5.0 for _ in completions]


too_big.reward_range = (0.0, 1.0)


@pytest.mark.parametrize(
    "fn, warning",
    [(constant, "gives every sample 1: no learning signal"), (boom, "raised ValueError: bad regex"),
     (too_big, "outside its documented range [0, 1]")],
)
def test_warnings(fn, warning):
    run = run_one(Reward(fn, 1.0), [chat("a"), chat("b")], {})
    assert any(warning in w for w in run.warnings + run.refusals), run.warnings


def test_user_completions_file(tmp_path):
    path = tmp_path / "mine.jsonl"
    rows = [{"completion": "<answer>\n3\n</answer>", "answer": "3"}, {"completion": "three", "answer": "3"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = rewards_check("gsm8k", "--completions", str(path))
    assert result.returncode == 0 and "<answer> 3 </answer>" in result.stdout


def test_bad_completions_file_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "no completion key"}\n')
    with pytest.raises(KitError, match="line 1: each line needs a \"completion\" key"):
        recipe = load_recipe("gsm8k")
        load_samples(str(path), recipe.sample_completions, recipe.name)


def test_samples_from_a_run_are_checked_against_the_values_given_in_training():
    from kit.checks.rewards_check import run_bundle
    from kit.rewards import RewardBundle

    def answer_match(completions, answer, **kwargs):
        return [1.0 if completion_text(c) == a else 0.0 for c, a in zip(completions, answer)]

    def not_applicable(completions, **kwargs):
        return [None for _ in completions]

    logged = [{"step": 1, "prompt": "q", "completion": "7", "answer": "7",
               "rewards": {"answer_match": 1.0, "not_applicable": float("nan")}},
              {"step": 1, "prompt": "q", "completion": "8", "answer": "7",
               "rewards": {"answer_match": 0.0, "not_applicable": float("nan")}}]
    runs = run_bundle(RewardBundle((answer_match, 1.0), (not_applicable, 0.5)), logged)
    assert not any("during training" in w for run in runs for w in run.warnings)  # None now is NaN then
    logged[1]["rewards"]["answer_match"] = 1.0  # as if the reward had changed since
    warnings = run_bundle(RewardBundle((answer_match, 1.0)), logged)[0].warnings
    assert warnings == [("gave 1 of 2 samples another value than during training (first: 1.0 then, 0.0 now): "
                         "the reward is not deterministic, or its code or the data changed since")]


def test_an_environment_recipe_replays_each_transcript_and_shows_get_reward():
    result = rewards_check("guess_number")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "HiddenNumber x1" in lines[0]
    assert next(line for line in lines if line.startswith("binary search")).split()[-4:] == ["1", "1", "1", "1.20"]
    assert next(line for line in lines if line.startswith("named without guessing")).split()[-2:] == ["0", "0.20"]


def test_a_penalty_function_given_a_negative_weight_is_warned_about():
    """soft_overlong_punishment gives -1..0 already: a negative weight would pay for what it penalizes."""
    from kit.checks.rewards_check import run_bundle
    from kit.rewards import RewardBundle, soft_overlong_punishment

    penalty = soft_overlong_punishment(max_length=8, cache=4, unit="words")
    samples = [{"completion": "short"}, {"completion": " ".join(["word"] * 10)}]
    (run,) = run_bundle(RewardBundle((penalty, -1.0)), samples)
    assert any("its values are at most 0 (a penalty already) and its weight is -1" in w for w in run.warnings)
    (run,) = run_bundle(RewardBundle((penalty, 1.0)), samples)
    assert run.warnings == []


def test_rows_where_a_reward_returns_none_are_listed_not_refused(capsys):
    from kit.checks.rewards_check import print_report, run_bundle
    from kit.rewards import RewardBundle

    def tagged_only(completions, **kwargs):
        return [1.0 if "<answer>" in completion_text(c) else None for c in completions]

    samples = [{"label": "tagged", "completion": "<answer>1</answer>"}, {"label": "bare", "completion": "1"}]
    runs = run_bundle(RewardBundle((tagged_only, 1.0)), samples)
    assert runs[0].refusals == [] and runs[0].missing == [1]
    print_report(runs, samples)
    assert "note: tagged_only: returned None (does not apply) for 1 of 2 samples: 2 'bare'" in capsys.readouterr().out


def test_a_label_with_a_lone_surrogate_prints(tmp_path):
    """JSON may carry "\\ud800"; a real stdout (UTF-8, strict) refuses to print it as it is."""
    samples = [{"label": "bad \ud800 label", "prompt": "p", "completion": chat("yes")},
               {"prompt": "p", "completion": chat("no \udfff")}]
    def says_yes(completions, **kwargs):
        return [float("yes" in completion_text(c)) for c in completions]

    runs = run_bundle(RewardBundle((says_yes, 1.0)), samples)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        print_report(runs, samples)
    out.seek(0)
    assert "bad \\ud800 label" in out.read()  # written as its escape


def test_a_reward_model_recipe_is_checked_offline_with_the_model_given_on_the_command_line():
    offline = rewards_check("helpful_preference", "--reward-model", "preference=kit:tiny-reward")
    assert offline.returncode == 0, offline.stdout[-2000:] + offline.stderr[-2000:]
    assert "preference x1" in offline.stdout and "concise, right" in offline.stdout
    refused = rewards_check("helpful_preference", "--reward-model", "preference")
    assert refused.returncode == 2 and refused.stderr.strip().endswith(
        "error: --reward-model 'preference': write NAME=MODEL, e.g. --reward-model preference=kit:tiny-reward")


JUDGE_RECIPE = """
from kit.rewards import RewardBundle, llm_judge
from recipes.concise_helpful import JUDGE_CALIBRATION, RUBRIC, SAMPLE_COMPLETIONS, prepare

REWARDS = RewardBundle((llm_judge(RUBRIC, name="judge_helpful", json_field="score"), 1.0))
DEFAULTS = {{"judge": {{"base_url": "{url}", "retries": 0}}}}
"""


def test_the_judge_is_calibrated_after_the_report_and_a_failure_said(tmp_path):
    from recipes.concise_helpful import JUDGE_CALIBRATION
    from tests.rewards.judge.servers import FirstNumberJudge, KnowingJudge

    recipe = tmp_path / "judged.py"
    for judge, verdict in [(FirstNumberJudge(), "failed"), (KnowingJudge([c["good"] for c in JUDGE_CALIBRATION]),
                                                           "passed")]:
        try:
            recipe.write_text(JUDGE_RECIPE.format(url=judge.base_url))
            result = rewards_check(str(recipe))
        finally:
            judge.close()
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]  # CPU: the smoke profile warns
        report, calibration = result.stdout.split("judge judge_helpful: calibration on 3 cases")
        assert "judge_helpful x1" in report and calibration.startswith(f" ({verdict})")
        assert ("warning: judge judge_helpful failed its calibration: case 1 'What is a CPU?'" in calibration) == (
            verdict == "failed")
