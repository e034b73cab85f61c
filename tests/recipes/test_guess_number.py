"""The hidden-number environment: its hints, its reward for few guesses, and the worked binary search."""

import pytest

from kit.recipes.guess_number import BOUND, HiddenNumber, names_the_number, secrets, sft_target


def game(secret: int) -> HiddenNumber:
    g = HiddenNumber()
    g.reset(secret=secret, prompt=[])
    return g


def test_hints_point_the_way_and_a_find_is_final():
    g = game(37)
    assert [g.guess(10), g.guess(40), g.guess("37"), g.guess(37)] == [
        "higher", "lower", "correct: it is 37", "already found: it is 37"]
    assert g.guesses == 3 and g.get_reward() == 1.0


def test_the_reward_falls_with_each_guess_past_binary_search():
    g = game(50)
    for n in range(1, 51):
        if g.guess(n).startswith("correct"):
            break
    assert g.guesses == 50 and g.get_reward() == 0.1
    assert game(5).get_reward() == 0.0  # not found


def test_a_guess_that_is_not_a_number_raises_for_the_model_to_read():
    with pytest.raises(ValueError):
        game(3).guess("twenty")


@pytest.mark.parametrize("secret", [1, 25, 37, 50])
def test_the_worked_answer_is_a_binary_search_within_the_bound(secret):
    messages = sft_target({"secret": secret})
    assert len([m for m in messages if m["role"] == "tool"]) <= BOUND
    assert messages[-2]["content"] == f"correct: it is {secret}" and messages[-1]["content"] == str(secret)


def test_the_last_turn_must_name_the_number():
    assert names_the_number([[{"role": "assistant", "content": "It is 37."}], [{"role": "assistant", "content": "7"}]],
                            [37, 37]) == [1.0, 0.0]


def test_splits_are_fixed():
    assert secrets("test") == secrets("test") and len(secrets("train")) == 400
