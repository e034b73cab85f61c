import json

import jsonschema
import pytest
from datasets import Dataset

from kit.config import DataConfig
from kit.data import load_rows
from kit.errors import KitError
from kit.recipes import json_extract, load_recipe
from tests.conftest import chat
from tests.recipes.samples import prepared_samples

PERSON_SCHEMA = json.dumps({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                            "required": ["name", "age"]})


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def person(name="Ada", age=36, **extra):
    return {"text": f"{name} is {age}.", "schema": PERSON_SCHEMA, "answer": json.dumps({"name": name, "age": age}),
            **extra}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return prepared_samples(json_extract, tmp_path_factory.mktemp("json-extract"))


def test_the_sample_is_prompts_schemas_and_gold_objects_that_fit_them(sample):
    train, test = sample["train"], sample["test"]
    assert (len(train), len(test)) == (64, 32)
    assert set(train.column_names) == {"prompt", "schema", "answer"}
    for row in train:
        system, user = row["prompt"]
        assert system == {"role": "system", "content": json_extract.SYSTEM_PROMPT}
        assert user["role"] == "user" and user["content"].startswith(f"Schema: {row['schema']}\nText: ")
        jsonschema.validate(json.loads(row["answer"]), json.loads(row["schema"]))
    kinds = {tuple(json.loads(row["schema"])["properties"]) for row in train}
    assert len(kinds) == 3, kinds  # people, products, events
    assert not {r["prompt"][1]["content"] for r in train} >= {r["prompt"][1]["content"] for r in test}


def test_the_sample_is_the_same_on_every_call(tmp_path):
    json_extract.write_sample(tmp_path / "a.jsonl", "train")
    json_extract.write_sample(tmp_path / "b.jsonl", "train")
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()


def test_the_sample_loads_through_the_kit_with_every_column_the_rewards_read():
    rows = load_rows(load_recipe("json_extract"), DataConfig(path="sample", split="test"))
    assert len(rows) == 32 and {"schema", "answer"} <= set(rows.column_names)


def test_each_sample_rows_worked_answer_is_right_in_the_strict_sense(sample):
    for row in sample["train"]:
        assert json_extract.EVAL.verdict(json_extract.sft_target(row), row).strict, row["answer"]


def test_a_file_without_the_schema_column_is_refused_naming_it(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"text": "Ada is 36.", "answer": '{"name": "Ada"}'}])
    with pytest.raises(KitError, match="lacks column\\(s\\) 'schema'; it has: text, answer"):
        json_extract.prepare("train", path)


@pytest.mark.parametrize("change, message", [
    ({"schema": '{"type": "object",'}, "row 1: 'schema' is not JSON"),
    ({"schema": '{"type": "objekt"}'}, "row 1: 'schema' is not a valid JSON schema"),
    ({"answer": "{'name': 'Ada'}"}, "row 1: 'answer' is not JSON"),
    ({"answer": ""}, "row 1: 'answer' is empty"),
    ({"answer": "[1, 2]"}, "row 1: 'answer' must be a JSON object \\(\\{...\\}\\), not list"),
    ({"schema": "42"}, "row 1: 'schema' must be a JSON object"),
    ({"text": " "}, "row 1: 'text' is empty"),
])
def test_a_broken_row_is_named(tmp_path, change, message):
    path = write_jsonl(tmp_path / "d.jsonl", [person(), person(**change)])
    with pytest.raises(KitError, match=message):
        json_extract.prepare("train", path)


def test_rows_whose_answer_breaks_their_own_schema_are_dropped_and_counted(tmp_path, capsys):
    broken = person(answer=json.dumps({"name": "Bo", "age": "forty"}))
    dataset = json_extract.prepare("train", write_jsonl(tmp_path / "d.jsonl", [person(), broken, person("Cy", 9)]))
    assert [json.loads(a)["name"] for a in dataset["answer"]] == ["Ada", "Cy"]
    assert "dropped 1 of 3 rows" in capsys.readouterr().out
    with pytest.raises(KitError, match="every row's answer breaks its own schema \\(first: row 0: 'forty'"):
        json_extract.prepare("train", write_jsonl(tmp_path / "e.jsonl", [broken]))


def test_the_hub_dataset_is_cut_once_into_disjoint_splits_with_item_as_answer(monkeypatch):
    hub = Dataset.from_list([{"title": "t", "text": f"P{i} is {i}.", "schema": PERSON_SCHEMA,
                              "item": json.dumps({"name": f"P{i}", "age": i})} for i in range(80)])
    asked = []
    monkeypatch.setattr(json_extract, "load_table", lambda source, hub_id, split: asked.append((hub_id, split)) or hub)
    train, test = json_extract.prepare("train", None), json_extract.prepare("test", None)
    assert asked == [(json_extract.HUB_ID, "train")] * 2
    assert (len(train), len(test)) == (80 - json_extract.HELD_OUT, json_extract.HELD_OUT)
    assert not set(train["answer"]) & set(test["answer"])
    assert test["answer"] == json_extract.prepare("test", None)["answer"]


def weighted(completions, schema=PERSON_SCHEMA, gold='{"name": "Ada", "age": 36}'):
    totals = [0.0] * len(completions)
    for reward in json_extract.REWARDS.rewards:
        values = reward.fn(completions=[chat(c) for c in completions], schema=[schema] * len(completions),
                           answer=[gold] * len(completions))
        totals = [t + reward.weight * (v or 0.0) for t, v in zip(totals, values)]
    return totals


def test_the_bundle_scores_good_bad_and_edge_replies():
    replies = [
        '{"name": "Ada", "age": 36}',  # right: 2 x 1 + 1 x 1
        '```json\n{"name": "ada", "age": 36.0}\n```',  # right, fenced, other case
        '{"name": "Ada", "age": 63}',  # half the fields: 2 x 0.5 + 1
        '{"name": "Ada", "age": "36"}',  # right values, breaks the schema: 2 x 1 + 1 x 0.5
        '{"name": "Ada"}',  # a required field missing: 2 x 0.5 + 0.5
        '{"name": "Ada", "age": 36',  # malformed
        'Sure! {"name": "Ada", "age": 36}',  # chatter around a bare object
        "",
    ]
    assert weighted(replies) == pytest.approx([3.0, 3.0, 2.0, 2.5, 1.5, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("reply, strict, lenient, formatted", [
    ('{"name": "Ada", "age": 36}', True, True, True),
    ('Sure! {"name": "Ada", "age": 36} Anything else?', False, True, False),
    ('{"name": "Ada", "age": "36"}', False, True, False),  # right values, but age must be an integer
    ('{"name": "Ada", "age": 37}', False, False, True),
    ('[{"name": "Ada", "age": 36}]', False, True, False),  # the right object, inside a list
    ("Ada, 36", False, False, False),
])
def test_scoring(reply, strict, lenient, formatted):
    row = {"schema": PERSON_SCHEMA, "answer": '{"name": "Ada", "age": 36}'}
    scoring = json_extract.EVAL
    assert tuple(scoring.verdict(reply, row)) == \
        (strict, lenient, formatted)


def test_a_schema_that_allows_anything_still_wants_an_object():
    row = {"schema": "{}", "answer": '{"name": "Ada"}'}
    assert json_extract.EVAL.verdict('{"name": "Ada"}', row).formatted
    assert not json_extract.EVAL.verdict('["Ada"]', row).formatted


EXPECTED = {  # label: (field_accuracy, json_format)
    "right, bare": (1.0, 1.0),
    "right, ```json block": (1.0, 1.0),
    "right, other case": (1.0, 1.0),
    "one field wrong": (2 / 3, 1.0),
    "breaks schema: age as text": (1.0, 0.5),
    "field missing": (2 / 3, 0.5),
    "text around the object": (0.0, 0.0),
    "malformed JSON": (0.0, 0.0),
    "empty": (0.0, 0.0),
}


def test_the_shipped_sample_completions_score_as_labelled():
    samples = json_extract.SAMPLE_COMPLETIONS
    assert [s["label"] for s in samples] == list(EXPECTED)
    columns = {"schema": [s["schema"] for s in samples], "answer": [s["answer"] for s in samples]}
    values = [r.fn(completions=[s["completion"] for s in samples], **columns) for r in json_extract.REWARDS.rewards]
    for sample, got in zip(samples, zip(*values)):
        assert got == pytest.approx(EXPECTED[sample["label"]]), sample["label"]
