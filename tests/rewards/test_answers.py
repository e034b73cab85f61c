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


from kit.rewards import extract_boxed, final_answer, parse_number  # noqa: E402


@pytest.mark.parametrize(
    "text, expected",
    [("The answer is 1,234.", 1234.0), ("$5.00", 5.0), ("-3", -3.0), ("3/4", 0.75), ("1.5e3", 1500.0),
     ("12%", 12.0), ("\u22122.5", -2.5), ("1/0", None), ("none", None), ("", None)],
)
def test_parse_number(text, expected):
    assert parse_number(text) == expected


def test_boxed_handles_nested_braces_and_takes_the_last():
    assert extract_boxed(r"first \boxed{1} then \boxed{\frac{1}{2}} done") == r"\frac{1}{2}"
    assert extract_boxed(r"\boxed{unclosed") is None
    assert extract_boxed("no box") is None


@pytest.mark.parametrize(
    "text, expected",
    [("<answer>7</answer> and \\boxed{8}", "7"), ("so \\boxed{12}.", "12"), ("The final answer is 42.", "42"),
     ("  just 5  ", "just 5"), ("<answer> <answer>3</answer> </answer>", "<answer>3")],
)
def test_final_answer_prefers_tag_then_box_then_phrase(text, expected):
    assert final_answer(text) == expected
