import pytest

from kit.rewards import canonical_number, extract_hash_answer, extract_tag


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1,234", "1234"),
        ("$5", "5"),
        ("$1,234.50", "1234.5"),
        ("-7", "-7"),
        ("\u22127 degrees", "-7"),  # unicode minus
        ("3.50", "3.5"),
        ("18.0", "18"),
        (".5", "0.5"),
        ("42 apples.", "42"),
        ("The answer is 12.\n", "12"),
        ("3 + 4 = 7", "7"),  # the last number is the result
        ("1,000,000 people", "1000000"),
        ("in 2,5 hours", "5"),  # a comma not followed by three digits is not a thousands separator
        ("no number here", None),
        ("", None),
        (None, None),
    ],
)
def test_canonical_number(text, expected):
    assert canonical_number(text) == expected


@pytest.mark.parametrize(
    "solution, expected",
    [
        ("She sold 48/2 = <<48/2=24>>24 clips.\n#### 72", "72"),
        ("...\n#### 1,234", "1234"),
        ("...\n#### $18", "18"),
        ("...\n#### -3", "-3"),
        ("...\n####  7 \n", "7"),
        ("no marker 72", None),
        ("#### ", None),
    ],
)
def test_extract_hash_answer(solution, expected):
    assert extract_hash_answer(solution) == expected


def test_extract_tag_takes_last_complete_block():
    text = "<answer>1</answer> then <answer>\n 2 \n</answer> and <answer>3"
    assert extract_tag(text, "answer") == "2"
    assert extract_tag("<answer>unclosed", "answer") is None
    assert extract_tag("<reasoning>\na\nb\n</reasoning>", "reasoning") == "a\nb"
