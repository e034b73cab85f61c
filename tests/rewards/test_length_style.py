import pytest

from kit.errors import KitError
from kit.rewards import (
    citations,
    code_block,
    ideal_length,
    json_format,
    max_length_penalty,
    min_length,
    reasoning_connectors,
    repetition_penalty,
)
from tests.conftest import chat


def words(n):
    return chat(" ".join(f"w{i}" for i in range(n)))


def test_length_rewards_in_words():
    assert ideal_length(10)([words(10), words(5), words(20), words(30)]) == [1.0, 0.5, 0.0, 0.0]
    assert min_length(10)([words(5), words(15)]) == [0.5, 1.0]
    assert max_length_penalty(10)([words(10), words(15), words(25)]) == [1.0, 0.5, 0.0]


def test_length_in_tokens_with_a_tokenizer(tiny_tokenizer):
    text = "12345"  # one token per digit, plus the leading "▁"
    tokens = len(tiny_tokenizer(text, add_special_tokens=False).input_ids)
    assert ideal_length(tokens, tokenizer=tiny_tokenizer)([text]) == [1.0]
    assert ideal_length(1)([text]) == [1.0]  # one word


def test_style_rewards():
    reasoning = chat("First add them, then halve it, because the question asks; therefore 7.")
    assert reasoning_connectors([reasoning, chat("7")]) == [1.0, 0.0]
    assert citations([chat("As shown [1] and (Smith, 2020)."), chat("Trust me.")]) == [1.0, 0.0]
    repeat = repetition_penalty(n=2)
    assert repeat([chat("a b a b a b"), chat("one two three four")]) == [pytest.approx(2 / 5), 1.0]


def test_json_format_with_and_without_schema():
    schema = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    completions = [chat('{"name": "Ada"}'), chat('```json\n{"name": 3}\n```'), chat("{name: Ada}"), chat("")]
    assert json_format(completions, schema=[schema] * 4) == [1.0, 0.5, 0.0, 0.0]
    assert json_format(completions) == [1.0, 1.0, 0.0, 0.0]
    assert json_format([chat('{"name": "Ada"}')], schema=['{"type": "array"}']) == [0.5]  # schema as a JSON string


def test_code_block():
    assert code_block()([chat("```python\nprint(1)\n```"), chat("print(1)")]) == [1.0, 0.0]


def test_length_units():
    text = chat("one two three")
    assert max_length_penalty(3)([text]) == [1.0]  # words
    assert max_length_penalty(7, unit="chars")([text]) == [pytest.approx(2 - 13 / 7)]
    assert max_length_penalty(2, unit="tokens")([text], completion_ids=[[1, 2, 3]]) == [0.5]  # TRL's ids
    with pytest.raises(KitError, match="length unit 'lines'"):
        max_length_penalty(3, unit="lines")
