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



from kit.rewards import exact_match, fuzzy_match, math_equivalent, numeric_match  # noqa: E402


def test_exact_match_ignores_case_and_space():
    assert (exact_match([wrap(" Paris "), chat("The answer is paris"), wrap("Lyon")], answer=["paris"] * 3)
            == [1.0, 1.0, 0.0])


def test_numeric_match_with_tolerance():
    strict, loose = numeric_match(), numeric_match(rel_tol=0.01)
    completions = [wrap("3/4"), chat("\\boxed{0.75}"), wrap("$1,234.00"), wrap("0.7501"), chat("nothing")]
    gold = ["0.75", "3/4", "1234", "0.75", "1"]
    assert strict(completions, answer=gold) == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert loose(completions, answer=gold)[3] == 1.0
    assert strict([wrap("1")], answer=["not a number"]) == [None]


def test_math_equivalent_uses_math_verify():
    completions = [chat("so \\boxed{12}"), wrap("\\frac{1}{2}"), wrap("0.5"), wrap("13"), chat("")]
    gold = ["12", "0.5", "\\frac{1}{2}", "12", "12"]
    assert math_equivalent(completions, answer=gold) == [1.0, 1.0, 1.0, 0.0, 0.0]


def test_fuzzy_match_partial_credit():
    scores = fuzzy_match([wrap("The Eiffel Tower"), wrap("Eiffel tower!"), wrap("Big Ben")],
                         answer=["eiffel tower"] * 3)
    assert scores[1] == 1.0 and 0.5 < scores[0] < 1.0 and scores[2] < 0.5


def test_numeric_closeness_gives_partial_credit_inside_the_window_only():
    from kit.rewards import numeric_closeness

    close = numeric_closeness(within=10)
    completions = [wrap("13"), wrap("12"), wrap("18"), wrap("30"), chat("13"), wrap("thirteen")]
    assert close(completions, answer=["13"] * 6) == [1.0, 0.9, 0.5, 0.0, 0.0, 0.0]  # no tag, no number: nothing
    assert close([wrap("4")], answer=[None]) == [None]
    assert close.__name__ == "answer_close"  # TRL logs it as rewards/answer_close/mean

