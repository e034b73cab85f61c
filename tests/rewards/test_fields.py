import json

import pytest

from kit.rewards import field_accuracy, first_json_object, json_reply
from kit.rewards.fields import field_score
from tests.conftest import chat

GOLD = {"name": "Ava Lindqvist", "age": 34, "venue": {"name": "Harbour Hall", "city": "Porto"},
        "tags": ["jazz", "outdoor"], "in_stock": True, "note": None}


def accuracy(reply: str, gold=GOLD) -> float | None:
    return field_accuracy([chat(reply)], answer=[json.dumps(gold)])[0]


def test_every_leaf_is_a_field_reached_through_keys_and_positions():
    assert accuracy(json.dumps(GOLD)) == 1.0
    # 8 fields: name, age, venue.name, venue.city, tags[0], tags[1], in_stock, note; the city and both tags are wrong
    wrong = {**GOLD, "venue": {"name": "Harbour Hall", "city": "Lyon"}, "tags": ["outdoor", "jazz"]}
    assert accuracy(json.dumps(wrong)) == pytest.approx(5 / 8)


def test_numbers_compare_numerically_and_strings_after_normalising():
    reply = {**GOLD, "name": "  ava   LINDQVIST.", "age": "34.0"}
    assert accuracy(json.dumps(reply)) == 1.0
    assert accuracy(json.dumps({**GOLD, "age": 34.5})) == pytest.approx(7 / 8)


def test_a_string_field_accepts_the_number_it_spells():
    assert accuracy('{"zip": 4050}', gold={"zip": "4050"}) == 1.0


def test_booleans_are_not_numbers():
    assert accuracy('{"in_stock": 1}', gold={"in_stock": True}) == 0.0
    assert accuracy('{"count": true}', gold={"count": 1}) == 0.0


def test_a_null_field_is_matched_by_null_or_by_its_absence_but_not_by_a_value():
    assert accuracy('{"a": 1}', gold={"a": 1, "b": None}) == 1.0
    assert accuracy('{"a": 1, "b": null}', gold={"a": 1, "b": None}) == 1.0
    assert accuracy('{"a": 1, "b": "x"}', gold={"a": 1, "b": None}) == 0.5


def test_a_reply_that_is_not_json_scores_zero_even_on_null_fields():
    assert accuracy("no idea", gold={"b": None}) == 0.0
    assert accuracy('{"name": "Ava",}') == 0.0


def test_a_json_block_is_read_and_text_around_a_bare_object_is_not():
    assert accuracy(f"```json\n{json.dumps(GOLD)}\n```") == 1.0
    assert accuracy(f"Here: {json.dumps(GOLD)}") == 0.0


def test_a_row_without_gold_does_not_apply():
    assert field_accuracy([chat("{}"), chat("{}")], answer=[None, " "]) == [None, None]


def test_an_empty_gold_object_wants_an_empty_reply():
    assert field_score({}, {}) == 1.0 and field_score({"a": 1}, {}) == 0.0


def test_json_reply_gives_objects_and_arrays_only():
    assert json_reply('{"a": 1}') == {"a": 1} and json_reply("[1, 2]") == [1, 2]
    assert json_reply("42") is None and json_reply('"text"') is None and json_reply("null") is None


def test_first_json_object_skips_braces_that_are_not_json():
    assert first_json_object('set {x} then {"a": {"b": 2}} and {"c": 3}') == {"a": {"b": 2}}
    assert first_json_object("[1, 2] {oops") is None


@pytest.mark.parametrize("text", ['{"a": ' * 3000, "[" * 5000, "{" * 2000, "\x00\ufffd", "```json\n{\n```"])
def test_pathological_replies_score_zero_without_raising(text):
    assert accuracy(text) == 0.0
    assert first_json_object(text) is None
