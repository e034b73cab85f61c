"""The reward-hacking alarm (kit.monitor.gaming) on scripted batches of a deliberately gameable recipe
(tests/monitor/gameable.py): each sign fires on the batches built to show it, and an honest run stays quiet."""

import json
from types import SimpleNamespace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kit.errors import KitError
from kit.monitor.gaming import Batch, GamingWatch, watch_for_gaming
from kit.monitor.health import HealthCallback, HealthMonitor
from kit.recipes import load_recipe
from tests.monitor import gameable

RECIPE = load_recipe("tests.monitor.gameable")
ROWS = gameable.prepare("train", None)
GROUP = 4


def reply(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def batch(write, paid=1.0, advantage=0.5, turn=0) -> Batch:
    """GROUP completions for each prompt, `write(a, b, i)` the i-th one's text, each paid `paid`; `turn` rotates
    the prompts' order, as the next generation batch would."""
    prompts, completions = [], []
    rows = list(zip(ROWS, gameable.PAIRS))
    for row, (a, b) in rows[turn % len(rows):] + rows[:turn % len(rows)]:
        for i in range(GROUP):
            prompts.append(row["prompt"])
            completions.append(reply(write(a, b, i)))
    n = len(completions)
    return Batch(prompts, completions, {"answer_value": [paid] * n}, [advantage] * n)


def gamed(a, b, i):
    return f"<answer>{a}+{b}</answer>" if i % 2 else f"<answer>{b}+{a}</answer>"


def worked(a, b, i):
    return f"{a} + {b} = {a + b}, so the sum is {a + b}.{' ' * i} <answer>{a + b}</answer>"


def answered(a, b, i):  # the right number and nothing else: no working
    return f"<answer>{a + b}</answer>{' ' * i}"


def run(watch: GamingWatch, steps: int, write, held_out: dict[int, float], reward=lambda s: 0.2 + 0.012 * s,
        start: int = 1):
    """Logged steps 1..steps with a rising reward and the held-out checks {step: strict}: each sign found, at the
    step it was first found (the health monitor prints it then), with its message."""
    fired, checks = {}, []
    for step in range(start, start + steps):
        if step in held_out:
            checks.append((step, held_out[step]))
        logs = {"reward": reward(step), "rewards/answer_value/mean": reward(step)}
        for code, message in watch.observe(step, logs, batch(write), list(checks)):
            fired.setdefault(code, (code, step, message))
    return list(fired.values())


@pytest.fixture
def watch(tiny_tokenizer):
    return GamingWatch(RECIPE, RECIPE.rewards, ROWS, tiny_tokenizer, {"answer_value": (0.0, 1.0)})


def test_a_reward_that_rises_while_held_out_strict_falls_is_named_with_paid_completions_the_judge_refuses(watch):
    fired = run(watch, 50, gamed, {25: 0.30, 50: 0.20})
    assert [(c, s) for c, s, _ in fired] == [("gaming:answer_value", 50)]  # the first moment two checks compare
    message = fired[0][2]
    assert "reward answer_value +0.30 over 25 steps while held-out strict fell 30.0% -> 20.0%, and 16 of 16 " \
           "completions it paid in the latest batch are held out as wrong" in message
    assert "e.g. '<answer>263+481</answer>', '<answer>481+263</answer>'" in message


def test_a_flat_held_out_score_under_a_rising_reward_fires_too(watch):
    fired = run(watch, 50, gamed, {25: 0.25, 50: 0.25})
    assert any(c == "gaming:answer_value" and "stayed at 25.0% -> 25.0%" in m for c, _, m in fired)


def test_an_honest_run_stays_quiet(watch):
    assert run(watch, 60, worked, {25: 0.30, 50: 0.45}) == []


def test_a_held_out_dip_with_every_paid_completion_accepted_by_the_judge_is_noise_not_gaming(watch):
    """As in the CPU demo: held-out strict fell 89 -> 78% between two checks of 64 prompts while it learned."""
    assert run(watch, 50, worked, {25: 0.89, 50: 0.78}) == []


def test_a_reward_that_did_not_rise_is_not_blamed(watch):
    assert run(watch, 50, gamed, {25: 0.30, 50: 0.20}, reward=lambda s: 0.5) == []


def test_one_string_for_every_prompt_is_said_after_three_steps(watch):
    fired = run(watch, 5, lambda a, b, i: "<answer>7</answer>", {})
    assert [(c, s) for c, s, _ in fired] == [("collapsed", 3)]
    assert "in 8 of 8 groups every completion is the same string, '<answer>7</answer>', whatever the prompt" \
        in fired[0][2]


def test_groups_agreeing_on_their_own_answers_are_not_a_collapse(watch):
    assert run(watch, 5, lambda a, b, i: f"<answer>{a + b}</answer>", {}) == []


def test_reinforced_answers_that_stop_using_the_prompts_numbers_are_said(watch):
    assert run(watch, 5, worked, {}) == []
    fired = run(watch, 6, answered, {}, start=6)
    assert [(c, s) for c, s, _ in fired] == [("facts_dropped", 9)]  # 1 step of 5 with working: 20%
    assert "32 of 160 completions GRPO reinforced in the last 5 batches mention a number or name from " \
           "their prompt's prompt, down from 100% at step 5 (e.g. '<answer>354</answer>')" in fired[0][2]


def test_a_policy_that_never_wrote_working_is_not_alarmed(watch):
    assert run(watch, 12, answered, {}) == []


def test_numbers_from_the_system_prompt_are_not_the_questions_facts(watch):
    run(watch, 5, worked, {})
    fired = run(watch, 5, lambda a, b, i: f"Numbers like 10 <answer>{a + b}</answer>{' ' * i}", {}, start=6)
    assert [c for c, _, _ in fired] == ["facts_dropped"]


def test_answers_that_were_not_reinforced_are_not_counted(watch):
    run(watch, 5, worked, {})
    for step in range(6, 12):
        assert watch.observe(step, {"reward": 0.5}, batch(answered, advantage=-0.5), []) == []


def test_a_fact_column_the_rows_lack_is_refused_in_one_line(tiny_tokenizer):
    recipe = SimpleNamespace(**{**vars(RECIPE), "fact_columns": ("question",)})
    with pytest.raises(KitError, match="FACT_COLUMNS names question, which its prepared rows lack"):
        GamingWatch(recipe, RECIPE.rewards, ROWS, tiny_tokenizer)


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=300))
@example("\ud800")  # a lone surrogate, which the tokenizer refuses as written (CI drew it)
def test_any_text_a_model_writes_is_read_without_error(tiny_tokenizer, text):
    watch = GamingWatch(RECIPE, RECIPE.rewards, ROWS, tiny_tokenizer)
    for step in (1, 2, 3, 4, 5):
        for code, message in watch.observe(step, {"rewards/answer_value/mean": 0.1 * step},
                                           batch(lambda a, b, i: text), [(1, 0.5), (step, 0.4)]):
            assert code in ("gaming:answer_value", "collapsed", "facts_dropped")
            json.dumps(message)  # as diagnostics.jsonl records it


def test_the_health_callback_says_an_alarm_once_and_records_it(tmp_path, tiny_tokenizer, capsys):
    health, trainer = watched_trainer(tmp_path, tiny_tokenizer)
    log_steps(health, trainer, range(1, 8), lambda step: batch(lambda a, b, i: "<answer>7</answer>", turn=step))
    said = capsys.readouterr().out
    assert said.count("health (step 3): in 8 of 8 groups every completion is the same string") == 1
    recorded = [json.loads(line) for line in (tmp_path / "diagnostics.jsonl").read_text().splitlines()]
    assert [(d["code"], d["step"]) for d in recorded] == [("collapsed", 3)]


def test_a_batch_logged_at_several_steps_counts_once(tmp_path, tiny_tokenizer, capsys):
    """steps_per_generation = 3: TRL logs each generation batch at three steps running; three batches make a
    collapse, not one batch read three times."""
    health, trainer = watched_trainer(tmp_path, tiny_tokenizer)
    log_steps(health, trainer, range(1, 10), lambda step: batch(lambda a, b, i: "<answer>7</answer>",
                                                                turn=(step - 1) // 3))
    assert "health (step 7): in 8 of 8 groups every completion is the same string" in capsys.readouterr().out


def watched_trainer(tmp_path, tokenizer):
    """A health callback with a GamingWatch, on a stand-in trainer whose latest batch (`_logs`) log_steps sets."""
    health = HealthCallback(HealthMonitor(beta=0.04), tmp_path / "diagnostics.jsonl")
    trainer = SimpleNamespace(callback_handler=SimpleNamespace(callbacks=[health]), train_dataset=ROWS,
                              processing_class=tokenizer, _logs={})
    watch_for_gaming(trainer, RECIPE, RECIPE.rewards, SimpleNamespace(checks=[]))
    return health, trainer


def log_steps(health, trainer, steps, scripted_at):
    """The health callback's on_log at each step, the trainer's latest batch `scripted_at(step)`."""
    for step in steps:
        scripted = scripted_at(step)
        trainer._logs = {"prompt": scripted.prompts, "completion": scripted.completions,
                         "rewards": scripted.rewards, "advantages": scripted.advantages}
        health.on_log(None, SimpleNamespace(global_step=step, is_world_process_zero=True), SimpleNamespace(),
                      logs={"loss": 0.0, "reward": 0.5, "rewards/answer_value/mean": 0.5})
