import pytest

from kit.rewards import completion_text, soft_xml_format, strict_xml_format, xml_tag_count
from tests.conftest import chat

GOOD = "<reasoning>\n2 + 2 = 4\n</reasoning>\n<answer>\n4\n</answer>\n"
SQUASHED = "<reasoning>2 + 2 = 4</reasoning> <answer>4</answer>"
TRAILING = GOOD + "and some chatter after it"
HALF = "<reasoning>\nthinking\n</reasoning>\nno answer tag"
NONE = "4"


@pytest.mark.parametrize(
    "text, strict, soft",
    [(GOOD, 1.0, 1.0), (SQUASHED, 0.0, 1.0), (TRAILING, 0.0, 1.0), (HALF, 0.0, 0.0), (NONE, 0.0, 0.0)],
)
def test_strict_and_soft_format(text, strict, soft):
    assert strict_xml_format()([chat(text)]) == [strict]
    assert soft_xml_format()([chat(text)]) == [soft]


def test_xml_count_partial_credit_and_trailing_penalty():
    score = xml_tag_count()
    assert score([chat(GOOD)]) == [1.0]
    assert score([chat(HALF)]) == [0.5]
    assert score([chat(NONE)]) == [0.0]
    tail = "and some chatter after it"
    assert score([chat(TRAILING)]) == [pytest.approx(1.0 - 0.001 * len(tail))]
    doubled = GOOD + GOOD  # every tag twice: no credit
    assert score([chat(doubled)]) == [0.0]


def test_format_rewards_take_other_tag_names():
    text = "<think>\nx\n</think>\n<solution>\n1\n</solution>"
    assert strict_xml_format("think", "solution")([text]) == [1.0]
    assert strict_xml_format()([text]) == [0.0]


def test_plain_string_and_chat_completions_score_alike():
    for reward in (strict_xml_format(), soft_xml_format(), xml_tag_count()):
        assert reward([GOOD, SQUASHED]) == reward([chat(GOOD), chat(SQUASHED)])


@pytest.mark.parametrize("odd", [None, 3, [], {}, [{"role": "assistant"}], [{"content": None}],
                                 [{"content": [{"type": "text", "text": GOOD}]}]])
def test_rewards_never_raise_on_odd_completions(odd):
    for reward in (strict_xml_format(), soft_xml_format(), xml_tag_count()):
        values = reward([odd])
        assert len(values) == 1 and 0.0 <= values[0] <= 1.0


def test_completion_text_reads_content_parts():
    assert completion_text([{"role": "assistant",
                             "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]) == "ab"
