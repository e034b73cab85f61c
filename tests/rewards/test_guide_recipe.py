"""A new user's recipe in the style of the GRPO guide: rewards that read `comp[0]["content"]`, its AdaptiveReward
pasted in, a penalty with a negative weight. Each test is what such a user ran into, through the kit's own commands."""

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from kit.checks.rewards_check import load_samples, print_report, run_bundle
from kit.errors import KitError
from kit.monitor.samples import SampleLogger
from kit.rewards import RewardBundle
from tests.conftest import REPO, chat

# As /tmp/guide/my_recipe.py was written: the guide's rewards, word for word.
GUIDE_RECIPE = textwrap.dedent(
    '''
    import re

    from datasets import Dataset
    from kit.rewards import RewardBundle

    SYSTEM_PROMPT = "Respond with <reasoning>...</reasoning> then <answer>...</answer>."


    def prepare(split, source):
        rows = [{"question": f"Sam has {i} apples and buys 2 more. How many apples now?", "answer": str(i + 2)}
                for i in range(8)]
        return Dataset.from_list(rows).map(lambda x: {
            "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": x["question"]}]})


    def extract_final_answer(text):
        match = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
        return match.group(1).strip() if match else None


    def correctness_reward(prompts, completions, answer, **kwargs):
        responses = [comp[0]["content"] for comp in completions]
        extracted = [extract_final_answer(r) for r in responses]
        return [2.0 if ans == gt else 0.0 for ans, gt in zip(extracted, answer)]


    def format_reward(completions, **kwargs):
        pattern = r"<reasoning>.*?</reasoning>\\s*<answer>.*?</answer>"
        responses = [comp[0]["content"] for comp in completions]
        return [1.0 if re.search(pattern, r, re.DOTALL) else 0.0 for r in responses]

    '''
)
REWARDS = "REWARDS = RewardBundle((correctness_reward, 1.0), (format_reward, 1.0))\n"

RIGHT = "<reasoning>\n9 + 2\n</reasoning>\n<answer>\n11\n</answer>"
WRONG = "<reasoning>\n9 + 3\n</reasoning>\n<answer>\n12\n</answer>"
BARE = "11"


def write_recipe(tmp_path, extra: str = "") -> str:
    """The guide recipe, with `extra` code after it (its own REWARDS, if it sets one)."""
    path = tmp_path / "my_recipe.py"
    path.write_text(GUIDE_RECIPE + textwrap.dedent(extra) + ("" if "REWARDS =" in extra else REWARDS))
    return str(path)


def rewards_check(*args):
    return subprocess.run([sys.executable, "-m", "kit", "rewards", "check", *args], check=False, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def log_samples(path, texts: list[str], answer: str = "11", step: int = 1):
    """What SampleLogger writes during a chat recipe's run, from TRL's record of a batch (trainer._logs)."""
    prompt = [{"role": "system", "content": "Respond..."}, {"role": "user", "content": "Sam has 9 apples..."}]
    logger = SampleLogger(path, every=1, count=len(texts), dataset=[{"prompt": prompt, "answer": answer}],
                          columns=["answer"])
    logger.trainer = SimpleNamespace(_logs={"prompt": [prompt] * len(texts), "completion": [chat(t) for t in texts],
                                            "rewards": {"correctness_reward": [0.0] * len(texts)}})
    logger.on_log(None, SimpleNamespace(is_world_process_zero=True, global_step=step), None, logs={"reward": 0.0})


def test_rewards_check_reads_a_chat_runs_samples_with_a_guide_reward(tmp_path):
    samples = tmp_path / "out" / "samples.jsonl"
    samples.parent.mkdir()
    log_samples(samples, [RIGHT, WRONG, BARE])
    result = rewards_check(write_recipe(tmp_path), "--completions", str(samples))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ERROR" not in result.stdout and "TypeError" not in result.stdout
    totals = [line.split()[-1] for line in result.stdout.splitlines()[1:4]]
    assert totals == ["3.00", "1.00", "0.00"]


def test_string_completions_reach_a_reward_as_training_passes_them(tmp_path):
    """A string (an older samples.jsonl, a user's own file, SAMPLE_COMPLETIONS) becomes the chat message TRL
    hands rewards for a chat recipe: one rule for files and for shipped samples."""
    path = tmp_path / "mine.jsonl"
    rows = [{"completion": RIGHT, "answer": "11"}, {"completion": WRONG, "answer": "11"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = rewards_check(write_recipe(tmp_path), "--completions", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line.split()[-1] for line in result.stdout.splitlines()[1:3]] == ["3.00", "1.00"]

    shipped = [{"label": "right", "completion": RIGHT, "answer": "11"},
               {"label": "bare", "completion": BARE, "answer": "11"}]
    result = rewards_check(write_recipe(tmp_path, f"SAMPLE_COMPLETIONS = {shipped!r}\n"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[1].split()[-1] == "3.00"


def test_the_guides_adaptive_reward_is_refused_with_the_kits_way(tmp_path):
    adaptive = '''
    class AdaptiveReward:
        def __init__(self, base_reward_func, initial_weight=1.0):
            self.func = base_reward_func
            self.weight = initial_weight

        def __call__(self, *args, **kwargs):
            rewards = self.func(*args, **kwargs)
            return [r * self.weight for r in rewards]

        def adjust_weight(self, success_rate):
            if success_rate < 0.3:
                self.weight *= 1.2
            elif success_rate > 0.8:
                self.weight *= 0.9


    REWARDS = RewardBundle((AdaptiveReward(correctness_reward), 1.0), (format_reward, 1.0))
    '''
    result = rewards_check(write_recipe(tmp_path, adaptive))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert "AdaptiveReward(correctness_reward)" in line
    assert "adaptive_rewards: [correctness_reward]" in line and "AdaptiveWeight(correctness_reward)" in line


def test_a_callable_without_a_name_is_told_to_name_it():
    from functools import partial

    def scaled(completions, factor, **kwargs):
        return [factor for _ in completions]

    with pytest.raises(KitError, match=r"partial\(scaled\) has no __name__.*__name__ = "):
        RewardBundle((partial(scaled, factor=2.0), 1.0))
    with pytest.raises(KitError, match="'not a function' is not a reward function"):
        RewardBundle(("not a function", 1.0))


def test_a_penalty_with_a_negative_weight_takes_off_the_total(capsys):
    def shouting(completions, **kwargs):
        return [1.0 if c[0]["content"].isupper() else 0.0 for c in completions]

    samples = [{"label": "calm", "completion": "eleven"}, {"label": "loud", "completion": "ELEVEN"}]
    runs = run_bundle(RewardBundle((shouting, -0.5)), load_samples(None, samples, "t"))
    print_report(runs, samples)
    out = capsys.readouterr().out
    assert "shouting x-0.5" in out.splitlines()[0]
    assert [line.split()[-1] for line in out.splitlines()[1:3]] == ["0.00", "-0.50"]


def test_a_wrong_count_fails_the_check_as_training_would(tmp_path):
    first_only = '''
    def first_only(completions, **kwargs):
        return [1.0 if "<answer>" in completions[0][0]["content"] else 0.0]


    REWARDS = RewardBundle((correctness_reward, 1.0), (first_only, 1.0))
    '''
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps({"completion": t, "answer": "11"}) + "\n" for t in (RIGHT, WRONG)))
    result = rewards_check(write_recipe(tmp_path, first_only), "--completions", str(path))
    assert result.returncode == 1, result.stdout + result.stderr
    # the guard's own words (kit.rewards.guard.CheckedReward), as training would stop with them
    assert ("error: reward 'first_only' returned 1 values for 2 completions; return exactly one value (a number, "
            "or None) per completion") in result.stdout


@pytest.mark.parametrize("body, words", [
    ('return [str(len(c[0]["content"])) for c in completions]', "reward 'texty' returned '"),
    ("return [None for _ in completions]", "reward 'texty' returned None (or NaN) for all 2 completions of a batch"),
    ("return None", "reward 'texty' returned NoneType instead of a list"),
    # fine on these samples, but TRL's first call on empty completions raises: training stops before it starts
    ('return [float(re.search(r"<answer>(.*?)</answer>", c[0]["content"], re.DOTALL).group(1).strip() == "11") '
     "for c in completions]", "of empty completions tried before training"),
])
def test_what_training_refuses_fails_the_check(tmp_path, body, words):
    reward = f'''
    def texty(completions, **kwargs):
        {body}


    REWARDS = RewardBundle((correctness_reward, 1.0), (texty, 1.0))
    '''
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps({"completion": t, "answer": "11"}) + "\n" for t in (RIGHT, WRONG)))
    result = rewards_check(write_recipe(tmp_path, reward), "--completions", str(path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert words in result.stdout and "\nerror: reward 'texty' " in result.stdout


def test_rows_a_reward_does_not_apply_to_are_listed(tmp_path):
    reward = '''
    def when_tagged(completions, **kwargs):
        return [None if "<answer>" not in c[0]["content"] else 1.0 for c in completions]


    REWARDS = RewardBundle((correctness_reward, 1.0), (when_tagged, 1.0))
    SAMPLE_COMPLETIONS = [{"label": "right", "completion": "<answer>11</answer>", "answer": "11"},
                          {"label": "bare", "completion": "11", "answer": "11"},
                          {"completion": "eleven", "answer": "11"}]
    '''
    result = rewards_check(write_recipe(tmp_path, reward))
    assert result.returncode == 0, result.stdout + result.stderr  # None is legal: "does not apply to this row"
    assert ("note: when_tagged: returned None (does not apply) for 2 of 3 samples: 2 'bare', 3 'eleven'"
            in result.stdout)


def test_eval_without_an_eval_judges_by_the_top_positive_weight_never_a_penalty():
    from kit.recipe import default_scoring

    def right(completions, **kwargs):
        return [1.0 for _ in completions]

    def shouting(completions, **kwargs):
        return [0.0 for _ in completions]

    assert default_scoring(RewardBundle((shouting, -2.0), (right, 1.0))).strict[0].fn is right
    with pytest.raises(KitError, match="no reward with a positive weight to judge by; give the recipe an EVAL"):
        default_scoring(RewardBundle((shouting, -0.5)))
