"""The published reward shapes (DAPO, Kimi 1.5, cosine scaling, step counting, code format, repetition).

Where the kit's definition is open-r1's, the expected values are the ones open-r1's own tests publish
(huggingface/open-r1, tests/test_rewards.py); where the kit goes further, the test says how.
"""

import inspect

import pytest

from kit.errors import KitError
from kit.rewards import (
    RewardBundle,
    answer_correct,
    code_block,
    cosine_scaled_length,
    kimi_length,
    math_equivalent,
    passes_tests,
    reasoning_steps,
    repetition_penalty,
    soft_overlong_punishment,
)
from kit.rewards.guard import is_row_optional
from kit.rewards.traits import documented_range
from tests.conftest import chat

GOLD = r"\frac{63}{400}"
RIGHT, WRONG = r"\boxed{\frac{63}{400}}", r"\boxed{\frac{64}{400}}"


# --- reasoning_steps ---

@pytest.mark.parametrize("text, expected", [
    ("Step 1: First step\nStep 2: Second step\nStep 3: Third step", 1.0),  # open-r1's cases
    ("First, we do this.\nSecond, we do that.\nFinally, we conclude.", 1.0),
    ("Step 1: Only step", 1 / 3),
    ("First, we do this.\nFinally, we conclude.", 2 / 3),
    ("Just plain text without any clear steps", 0.0),
    ("We add.\n1. Add the tens.\n2. Add the units.\n3. Carry.", 1.0),  # a numbered list past the first line
    ("- take 3\n- add 4", 2 / 3),
])
def test_reasoning_steps_counts_steps(text, expected):
    assert reasoning_steps([chat(text)]) == [pytest.approx(expected)]


def test_reasoning_steps_pays_nothing_for_empty_or_pasted_steps():
    assert reasoning_steps([chat("Step 1:\nStep 2:\nStep 3:")]) == [0.0]
    assert reasoning_steps([chat("Step 1: add. Step 2: add. Step 3: add. Step 4: add.")]) == [pytest.approx(1 / 3)]
    assert reasoning_steps([chat("First, x\nFirst, x\nFirst, x")]) == [pytest.approx(1 / 3)]


# --- cosine_scaled_length ---

@pytest.mark.parametrize("content, length, expected", [
    (RIGHT, 20, 0.943), (RIGHT, 80, 0.547), (WRONG, 20, -0.942), (WRONG, 80, -0.547),  # open-r1's values
])
def test_cosine_scaled_length_matches_open_r1(content, length, expected):
    reward = cosine_scaled_length(math_equivalent, max_length=100)
    padded = content + " " * (length - len(content))
    assert reward([chat(padded)], answer=[GOLD]) == [pytest.approx(expected, abs=5e-3)]


def test_cosine_scaled_length_stays_at_its_ends_past_max_length():
    reward = cosine_scaled_length(math_equivalent, max_length=100)
    at_max, past = reward([chat(RIGHT + " " * 78), chat(RIGHT + " " * 500)], answer=[GOLD, GOLD])
    assert at_max == pytest.approx(0.5) and past == pytest.approx(0.5)  # open-r1's cosine would climb back up
    wrong_past = reward([chat(WRONG + " " * 500)], answer=[GOLD])
    assert wrong_past == [pytest.approx(-0.5)]


def test_cosine_scaled_length_skips_rows_its_correctness_skips_and_reads_its_columns():
    reward = cosine_scaled_length(answer_correct, max_length=50, unit="words")
    assert reward([chat("<answer>4</answer>")], answer=[None]) == [None]
    assert RewardBundle((reward, 1.0)).columns_needed() == {"cosine_length": ["answer"]}
    assert documented_range(reward) == (-1.0, 1.0)


# --- kimi_length ---

def test_kimi_length_matches_open_r1():
    long = "  " + "x" * 10
    right = kimi_length(math_equivalent)([chat(RIGHT), chat(RIGHT + long)], answer=[GOLD] * 2)
    assert right[0] == pytest.approx(0.5) and right[1] < right[0]
    wrong = kimi_length(math_equivalent)([chat(WRONG), chat(WRONG + long)], answer=[GOLD] * 2)
    assert wrong[1] < wrong[0] <= 0.0
    assert kimi_length(math_equivalent)([chat(RIGHT), chat(WRONG)], answer=[GOLD] * 2) == [0.0, 0.0]  # same length
    mixed = kimi_length(math_equivalent)(
        [chat(RIGHT), chat(RIGHT + long), chat(WRONG), chat(WRONG + long)], answer=[GOLD] * 4)
    assert mixed[0] > 0 and mixed[2] > mixed[1] >= mixed[3] and mixed[2] <= 0 and mixed[3] <= 0


def test_kimi_length_compares_a_completion_only_with_its_own_prompt():
    # Two prompts: the short group's longest answer must not be paid as if it were short in the batch.
    completions = [chat(RIGHT), chat(RIGHT + "x" * 10), chat(RIGHT + "x" * 100), chat(RIGHT + "x" * 200)]
    prompts = ["p1", "p1", "p2", "p2"]
    scores = kimi_length(math_equivalent)(completions, prompts=prompts, answer=[GOLD] * 4)
    assert scores == [pytest.approx(0.5), pytest.approx(-0.5), pytest.approx(0.5), pytest.approx(-0.5)]


def test_kimi_length_never_pays_a_wrong_answer():
    completions = [chat("<answer>5</answer>"), chat("<answer>4</answer> and more words here")]
    assert kimi_length(answer_correct)(completions, answer=["4", "4"]) == [0.0, pytest.approx(-0.5)]


# --- soft_overlong_punishment ---

@pytest.mark.parametrize("length, expected", [(50, 0.0), (110, -1.0), (90, -0.5)])  # open-r1's values
def test_soft_overlong_punishment_matches_open_r1(length, expected):
    reward = soft_overlong_punishment(max_length=100, cache=20)
    assert reward([chat("x")], completion_ids=[[1] * length]) == [pytest.approx(expected)]


def test_soft_overlong_punishment_has_dapos_shape():
    reward = soft_overlong_punishment(max_length=100, cache=20)
    scores = reward([chat("x")] * 4, completion_ids=[[1] * n for n in (80, 81, 100, 101)])
    assert scores == [0.0, pytest.approx(-0.05), pytest.approx(-1.0), -1.0]  # -1 at the limit, not at twice it
    assert documented_range(reward) == (-1.0, 0.0)


def test_soft_overlong_punishment_needs_tokens_or_a_tokenizer(tiny_tokenizer):
    with pytest.raises(KitError, match="tokenizer"):
        soft_overlong_punishment(100, 20)([chat("x")])
    counted = soft_overlong_punishment(4, 1, tokenizer=tiny_tokenizer)([chat("12345")])
    assert counted == [-1.0]
    with pytest.raises(KitError, match="cache"):
        soft_overlong_punishment(100, 0)


# --- code_block(language) ---

def test_code_block_checks_the_language():
    python = code_block("python")
    texts = ["```python\ndef f(): pass\n```", "```py\nx = 1\n```", "```\ndef f(): pass\n```",
             "```javascript\nconsole.log('hello');\n```", "def f(): pass"]
    assert python([chat(t) for t in texts]) == [1.0, 1.0, 0.5, 0.0, 0.0]
    assert code_block("javascript")([chat(texts[3])]) == [1.0]
    assert code_block(None)([chat(texts[3])]) == [1.0]


def test_code_block_reads_a_language_column_per_row():
    js = chat("```js\nconsole.log(1)\n```")
    assert code_block("python")([js, js], language=["javascript", "python"]) == [1.0, 0.0]


def test_python_code_is_taken_from_the_python_block_not_the_first_block():
    text = "```javascript\nfunction f() {}\n```\n```python\ndef add(a, b):\n    return a + b\n```"
    assert passes_tests()([chat(text)], tests=[["assert add(2, 3) == 5"]]) == [1.0]


# --- repetition_penalty: words, and characters where a script has no spaces ---

@pytest.mark.parametrize("text, n, open_r1_value, max_penalty", [  # open-r1's values, penalty = -p x (1 - share)
    ("this is a test sentence", 2, 0.0, -1.0),
    ("this this this this this", 2, -0.75, -1.0),
    ("this is a this is a test", 2, -1 / 3, -1.0),
    ("test test test test", 3, -0.25, -0.5),
    ("this is a this is a test", 3, -0.4, -2.0),
    ("", 2, 0.0, -1.0),
    ("two words", 3, 0.0, -1.0),
    ("word word word word", 3, -0.5, -1.0),
    ("one two one two", 3, 0.0, -1.0),
    ("A B C A B C", 3, -0.25, -1.0),
    ("A B C A B C E F G A B C A B C", 3, -0.3846, -1.0),
    ("A B C D E F G H I J K L", 3, 0.0, -1.0),
])
def test_repetition_penalty_matches_open_r1_word_ngrams(text, n, open_r1_value, max_penalty):
    share = repetition_penalty(n)([chat(text)])[0]
    assert max_penalty * (1 - share) == pytest.approx(open_r1_value, abs=1e-4)


def test_repetition_penalty_sees_repeats_in_text_without_spaces():
    repeated, varied = "这个这个这个这个这个", "今天天气很好我们一起去公园散步"
    scores = repetition_penalty(2)([chat(repeated), chat(varied)])
    assert scores[0] == pytest.approx(2 / 9)  # 9 character pairs, 2 distinct; as one "word" it scored 1.0
    assert scores[1] == 1.0
    mixed = repetition_penalty(2)([chat("I like 猫猫猫猫 a lot")])[0]
    assert mixed < 1.0


# --- the wrappers are rewards like any other ---

def test_correctness_aware_rewards_keep_the_row_optional_mark():
    tests_length = cosine_scaled_length(passes_tests(), max_length=100)
    assert is_row_optional(tests_length)
    assert "tests" in inspect.signature(tests_length).parameters
    assert not is_row_optional(kimi_length(answer_correct))
