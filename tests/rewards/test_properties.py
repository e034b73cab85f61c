"""Every reward returns exactly one float (or None) per completion, in its range, whatever the text."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.recipes import load_recipe
from kit.rewards.presets import PRESETS
from tests.conftest import chat


def all_rewards():
    rewards = {}
    for bundle in [load_recipe("gsm8k").rewards] + [make() for make in PRESETS.values()]:
        for reward in bundle.rewards:
            rewards[reward.name] = reward.fn
    return rewards


REWARDS = all_rewards()
FAST = {name: fn for name, fn in REWARDS.items() if name != "code_tests"}  # the sandbox costs a process per call
COLUMNS = {"answer": "72", "tests": ["assert solve(1) == 1"], "schema": None}

TRICKY = [
    "", " ", "\n\n", "The answer is 1,234.", "$5.00", "-3", "3/4", "\\boxed{12}", "\\boxed{\\frac{1",
    "<answer><answer>1</answer></answer>", "<reasoning></reasoning><answer></answer>" * 50,
    "<answer>" * 1000, "x" * 10_000, "\x00\ufffd\U0001f600 ünïcödé 日本語 \u202e", "```python\n" + "(" * 5000,
    '{"a": ' * 3000, "```json\n{\"a\": 1}\n```",
]


def check(name, fn, texts):
    completions = [chat(t) for t in texts] + list(texts)  # chat messages and plain strings
    columns = {key: [value] * len(completions) for key, value in COLUMNS.items()}
    values = fn(completions=completions, **columns)
    assert len(values) == len(completions), name
    for value in values:
        assert value is None or (isinstance(value, float) and 0.0 <= value <= 1.0), (name, value)


@pytest.mark.parametrize("name", sorted(FAST))
def test_golden_tricky_texts(name):
    check(name, FAST[name], TRICKY)


@pytest.mark.parametrize("name", sorted(FAST))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(max_size=300), min_size=1, max_size=4))
def test_any_text_gives_one_score_each(name, texts):
    check(name, FAST[name], texts)


@settings(max_examples=8, deadline=None)
@given(texts=st.lists(st.text(max_size=200), min_size=1, max_size=2))
def test_sandboxed_code_reward_on_any_text(texts):
    check("code_tests", REWARDS["code_tests"], texts)


def test_code_reward_on_tricky_texts():
    check("code_tests", REWARDS["code_tests"], TRICKY[:6])
