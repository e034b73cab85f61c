import pytest

from kit.rewards import answer_correct, integer_answer, last_number_correct, numeric_closeness
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
    close = numeric_closeness(within=10)
    completions = [wrap("13"), wrap("12"), wrap("18"), wrap("30"), chat("13"), wrap("thirteen")]
    assert close(completions, answer=["13"] * 6) == [1.0, 0.9, 0.5, 0.0, 0.0, 0.0]  # no tag, no number: nothing
    assert close([wrap("4")], answer=[None]) == [None]
    assert close.__name__ == "answer_close"  # TRL logs it as rewards/answer_close/mean



# The whole answer is judged, not its last number (issue 19). Each row: answer, gold, what every numeric
# reward (answer_correct on the tag, numeric_match and math_equivalent on the final answer) must say.
WHOLE_ANSWER_CASES = [
    ("3/4", "4", 0.0),  # 3/4 is 0.75; its last number is the gold
    ("12/4", "4", 0.0),  # 12/4 is 3
    ("\\frac{3}{4}", "4", 0.0),
    ("18 or 20", "20", 0.0),  # a hedge: two numbers
    ("10:30", "30", 0.0),
    ("13 13", "13", 0.0),
    ("12/4 = 3", "3", 0.0),  # an equation, not a value
    ("\\boxed{\\frac{64}{400}}", "\\frac{63}{400}", 0.0),  # the denominators agree, the values do not
    ("\\boxed{\\frac{63}{400}}", "\\frac{63}{400}", 1.0),
    ("1/2", "0.5", 1.0),
    ("\\frac{1}{2}", "0.5", 1.0),
    ("0.5", "1/2", 1.0),
    ("50%", "0.5", 1.0),  # a percentage is its value...
    ("50%", "50", 1.0),  # ...and its count of percent, GSM8K's way
    ("0.5", "50", 0.0),
    ("1,234", "1234", 1.0),
    ("$72.00", "72", 1.0),
    ("72 dollars", "72", 1.0),
    ("72 apples and 3 pears", "72", 0.0),
    ("-3", "3", 0.0),
]


@pytest.mark.parametrize("given, gold, expected", WHOLE_ANSWER_CASES)
def test_numeric_rewards_judge_the_whole_answer(given, gold, expected):
    completion = wrap(given)
    assert answer_correct([completion], answer=[gold]) == [expected]
    assert numeric_match()([completion], answer=[gold]) == [expected]
    assert math_equivalent([completion], answer=[gold]) == [expected]


# Issue 43: a question whose gold is a number asks for the number. An expression equal to it ('14+9' for "What
# is 14 plus 9?") copies the question's arithmetic: answer_correct and numeric_closeness pay a numeral only.
NUMERAL_CASES = [
    ("23", "23", 1.0), ("1,200", "1200", 1.0), ("$1,200", "1200", 1.0), ("18.0", "18", 1.0), ("72 dollars", "72", 1.0),
    ("x = 72", "72", 1.0), ("1/2", "0.5", 1.0), ("\\frac{1}{2}", "0.5", 1.0), ("$\\frac{1}{2}$", "0.5", 1.0),
    ("-\\frac{1}{2}", "-0.5", 1.0), ("-3/4", "-0.75", 1.0), ("0.75", "3/4", 1.0), ("50%", "50", 1.0), ("-3", "-3", 1.0),
    ("\\boxed{23}", "23", 1.0),
    ("14+9", "23", 0.0), ("14 + 9", "23", 0.0), ("(14+9)", "23", 0.0), ("12/4", "3", 0.0), ("\\frac{12}{4}", "3", 0.0),
    ("2/4", "0.5", 0.0), ("4*2", "8", 0.0), ("2^{3}", "8", 0.0), ("2 \\times 4", "8", 0.0), ("\\sqrt{64}", "8", 0.0),
    ("10-2", "8", 0.0), ("-2+10", "8", 0.0), ("0.1+0.2", "0.3", 0.0),
]


@pytest.mark.parametrize("given, gold, expected", NUMERAL_CASES)
def test_answer_correct_pays_a_numeral_not_an_expression(given, gold, expected):
    assert answer_correct([wrap(given)], answer=[gold]) == [expected]
    assert numeric_closeness(within=10)([wrap(given)], answer=[gold]) == [expected]
    assert last_number_correct([wrap(given)], answer=[gold])[0] <= 1.0


def test_the_question_copied_is_not_the_number_for_any_arithmetic_reward():
    copied = wrap("14+9")
    assert answer_correct([copied], answer=["23"]) == [0.0]
    assert numeric_closeness(within=10)([copied], answer=["23"]) == [0.0]
    assert last_number_correct([copied], answer=["23"]) == [0.0]  # its last number is 9


def test_expressions_stay_right_where_the_gold_is_one_and_for_the_general_rewards():
    assert answer_correct([wrap("2\\sqrt{2}"), wrap("\\sqrt{8}")], answer=["\\sqrt{8}"] * 2) == [1.0, 1.0]
    assert numeric_match()([wrap("12/4")], answer=["3"]) == [1.0]  # numeric_match and math_equivalent: any value
    assert math_equivalent([wrap("12/4")], answer=["3"]) == [1.0]


def test_a_box_is_judged_whole_where_the_reward_reads_it():
    completions = [chat("so \\boxed{18 \\text{ or } 20}"), chat("so \\boxed{\\frac{3}{4}}"), chat("so \\boxed{20}")]
    assert numeric_match()(completions, answer=["20"] * 3) == [0.0, 0.0, 1.0]
    assert math_equivalent(completions, answer=["20"] * 3) == [0.0, 0.0, 1.0]


def test_math_equivalent_keeps_math_verify_rounding_and_symbolic_golds():
    completions = [wrap("0.333333"), wrap("0.33"), wrap("x^2 + 1"), wrap("x^2 + 1 or x^2 - 1")]
    assert math_equivalent(completions, answer=["\\frac{1}{3}", "\\frac{1}{3}", "x^2+1", "x^2+1"]) == [
        1.0, 0.0, 1.0, 0.0]


def test_numeric_closeness_pays_nothing_for_a_hedge():
    close = numeric_closeness(within=10)
    assert close([wrap("12 or 13"), wrap("12"), wrap("3/4")], answer=["13", "13", "1"]) == [0.0, 0.9, 0.975]


@pytest.mark.parametrize("reply, gold, expected", [
    ("<answer>72</answer>", "72", 1.0),
    ("<answer>18 or 72</answer>", "72", 1.0),  # the last number, whatever else the answer says
    ("<answer>72 or 18</answer>", "72", 0.0),
    ("She has 1,234 apples", "1234", 1.0),  # no tag: the last number of the whole reply
    ("so \\boxed{1/2}", "0.5", 1.0),  # not the last number (2), but all of the answer is right
    ("<answer>$72.00</answer>", "$72", 1.0),
    ("no number here", "72", 0.0),
    ("<answer>72</answer>", None, None),
])
def test_last_number_correct_is_the_lenient_reading(reply, gold, expected):
    assert last_number_correct([chat(reply)], [gold]) == [expected]
