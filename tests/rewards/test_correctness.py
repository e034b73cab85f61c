from kit.rewards import answer_correct, integer_answer
from tests.conftest import chat


def wrap(answer: str) -> list[dict]:
    return chat(f"<reasoning>\nwork\n</reasoning>\n<answer>\n{answer}\n</answer>")


def test_answer_correct_compares_numbers_not_strings():
    completions = [wrap("1,000"), wrap("$1000.00"), wrap("999"), wrap("1000 dollars"), chat("1000")]
    assert answer_correct(completions, answer=["1000"] * 5) == [1.0, 1.0, 0.0, 1.0, 0.0]


def test_answer_correct_negative_and_decimal():
    assert answer_correct([wrap("-3"), wrap("3"), wrap("2.50")], answer=["-3", "-3", "2.5"]) == [1.0, 0.0, 1.0]


def test_answer_correct_skips_rows_without_gold():
    assert answer_correct([wrap("4"), wrap("4")], answer=[None, ""]) == [None, None]


def test_answer_correct_text_gold_matches_case_insensitively():
    assert answer_correct([wrap("Paris"), wrap("Lyon")], answer=["paris", "paris"]) == [1.0, 0.0]


def test_integer_answer():
    completions = [wrap("12"), wrap("-4"), wrap("12.5"), wrap("12 apples"), chat("12")]
    assert integer_answer(completions) == [1.0, 1.0, 0.0, 0.0, 0.0]
