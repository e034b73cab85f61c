"""Hostile model text: every shipped recipe's rewards, called as training calls them, never raise and stay in range.

A policy writes whatever earns: lone surrogates, NUL, ten thousand unclosed brackets, a number of five thousand
digits, a reply of a hundred thousand characters. Each reward gets such text as TRL hands it over (chat messages,
a tool recipe's whole transcript, the row's dataset columns, a fresh environment where the recipe has one) and
must return one float in its documented range, or None, per completion. `pytest --all` tries many more texts.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.checks.rewards_check import NOT_COLUMNS
from kit.recipes import known_recipes, load_recipe
from kit.rewards.traits import KIT_RANGE, trait

RECIPES = {name: load_recipe(name) for name in known_recipes()}
# Each reward that runs the completion's code costs a sandboxed process per completion: tried on HOSTILE only.
# A reward scored by a model asks a server: tests/rewards/judge/test_live.py sends it HOSTILE.
FAST = [(name, reward) for name, recipe in RECIPES.items() for reward in recipe.rewards.rewards
        if not trait(reward.fn, "runs_model_code", False) and not trait(reward.fn, "source")]
SANDBOXED = [(name, reward) for name, recipe in RECIPES.items() for reward in recipe.rewards.rewards
             if trait(reward.fn, "runs_model_code", False)]

HOSTILE = ["\ud800", "a\udfffb\ud800\udc00", "\x00", "\x00" * 1000, "[" * 10_000, "{" * 10_000, "(" * 10_000,
           "\\frac{" * 3000, "\\sqrt{" * 3000, "9" * 5000, "1" + "0" * 5000, "-" + "9" * 5000 + ".5",
           "1e" + "9" * 5000, "1e999999999", "1e-999999999", "9" * 400 + "/" + "7" * 400, "1,000" * 2000,
           "2^{2^{2^{2^{2^{10}}}}}", "10^{10^{10}}", "9" * 5000 + "%", "x" * 100_000, "\u202e\ufffd\U0001f600",
           "<answer>" * 1000, "</answer>" * 1000, "```python\n" * 500, '{"a": ' * 3000, "\\boxed{" * 3000]
# Where a reward looks: the answer tag, a box, the reasoning format, a code block, JSON, nowhere in particular.
PLACES = ["@", "<answer>@</answer>", "<answer>\n@\n</answer>", "\\boxed{@}", "<think>\n@\n</think>\n\\boxed{@}",
          "<reasoning>\n@\n</reasoning>\n<answer>\n@\n</answer>", "```python\n@\n```", '{"name": "@"}',
          "The answer is @."]

pieces = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40),
                   st.integers(min_value=1, max_value=6000).map(lambda digits: "9" * digits))
texts = st.builds(lambda place, piece: place.replace("@", piece), st.sampled_from(PLACES), pieces)


def completions(text: str) -> list:
    """The text as TRL hands a completion over: one reply, and a tool transcript whose result is the text too."""
    call = {"type": "function", "function": {"name": "python", "arguments": {"code": text}}}
    return [[{"role": "assistant", "content": text}],
            [{"role": "assistant", "content": "", "tool_calls": [call]}, {"role": "tool", "name": "python",
                                                                          "content": text},
             {"role": "assistant", "content": text}]]


def score(name: str, reward, text: str) -> None:
    recipe = RECIPES[name]
    sample = recipe.sample_completions[0]
    batch = completions(text)
    columns = {key: [value] * len(batch) for key, value in sample.items() if key not in NOT_COLUMNS}
    row = {key: values[0] for key, values in columns.items()}
    if recipe.toolbox.environment is not None:
        columns["environments"] = [recipe.toolbox.replay(row, []) for _ in batch]
    prompts = [[{"role": "user", "content": "question"}]] * len(batch)
    values = reward.fn(completions=batch, prompts=prompts, **columns)
    low, high = trait(reward.fn, "reward_range", KIT_RANGE)
    assert len(values) == len(batch), (name, reward.name)
    for value in values:
        assert value is None or (isinstance(value, float) and low <= value <= high), (name, reward.name, value)


@pytest.mark.parametrize("name, reward", FAST, ids=[f"{n}-{r.name}" for n, r in FAST])
def test_golden_hostile_texts(name, reward):
    for piece in HOSTILE:
        for place in PLACES:
            score(name, reward, place.replace("@", piece))


@pytest.mark.parametrize("name, reward", SANDBOXED, ids=[f"{n}-{r.name}" for n, r in SANDBOXED])
def test_rewards_that_run_code_survive_hostile_code(name, reward):
    for piece in HOSTILE:
        score(name, reward, f"```python\n{piece}\n```")


FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("name, reward", FAST, ids=[f"{n}-{r.name}" for n, r in FAST])
@settings(max_examples=25, **FUZZ)
@given(text=texts)
def test_any_hostile_text(name, reward, text):
    score(name, reward, text)


@pytest.mark.slow  # `pytest --all`: the same, ten times over
@pytest.mark.parametrize("name, reward", FAST, ids=[f"{n}-{r.name}" for n, r in FAST])
@settings(max_examples=250, **FUZZ)
@given(text=texts)
def test_any_hostile_text_at_length(name, reward, text):
    score(name, reward, text)
