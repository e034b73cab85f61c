"""Structured extraction: read a text, reply with one JSON object that follows the row's JSON schema.

    make train RECIPE=json_extract                             # hub dataset paraloq/json_data_extraction
    make train RECIPE=json_extract DATA=my_extractions.jsonl   # local file: text, schema, answer columns

Each row holds a `text`, a JSON `schema` and the gold `answer` object, the last two as JSON text (so rows
with different fields sit in one table). The reply is the object alone, bare or in a ```json block: the
form kit.rewards.json_format reads. It is rewarded for its fields (field_accuracy: the share of gold
fields it gets right, numbers compared numerically, strings normalised) and for validating against the
row's schema (json_format).

The hub dataset has one split of about 480 documents (columns text, schema, item); the kit holds out
HELD_OUT of them, chosen with a fixed seed, as `test`, and maps `item` to `answer`. A row whose gold
answer breaks its own schema is dropped, with a count printed: no reply could earn full marks on it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from kit.data import load_table, require_columns, rows_kept
from kit.errors import KitError
from kit.recipe import Scoring
from kit.rewards import RewardBundle, field_accuracy, first_json_object, json_format, json_reply
from kit.rewards.fields import field_score, gold_object
from kit.rewards.text import completion_text

HUB_ID = "paraloq/json_data_extraction"
HUB_SPLIT = "train"  # its only split
HELD_OUT, SPLIT_SEED = 50, 0

SYSTEM_PROMPT = ("Extract the fields the JSON schema asks for from the text. Reply with one JSON object "
                 "that follows the schema, and nothing else.")

REWARDS = RewardBundle(
    (field_accuracy, 2.0),  # the share of gold fields right: the signal that keeps rising
    (json_format, 1.0),  # 1 parses and follows the schema, 0.5 parses but breaks it, 0 not JSON
)

DEFAULTS = {
    # The hub's documents run to a few hundred words and their objects nest several levels deep: room for both.
    "model": {"max_seq_length": 4096},
    "data": {"max_prompt_length": 3072},
    "grpo": {"max_completion_length": 1024, "max_steps": 250},  # 3072 prompt + 1024 completion = 4096 tokens
}


def to_prompt(text: str, schema: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Schema: {schema}\nText: {text}"}]


def prepare(split: str, source: str | None):
    """Rows of `text`, `schema`, `answer` -> `prompt` (system + schema + text), `schema`, `answer` (JSON text)."""
    table = _hub_split(split) if source is None else load_table(source, HUB_ID, split)
    where = f"data {source or HUB_ID}"
    require_columns(table, ["text", "schema", "answer"], where)
    checked = [_checked_row(row, f"{where}, row {index}") for index, row in enumerate(table)]
    kept = [row for row, problem in checked if problem is None]
    broken = [f"row {index}: {problem}" for index, (_, problem) in enumerate(checked) if problem is not None]
    first = f" (first: {broken[0][:160]})" if broken else ""
    return rows_kept(kept, len(checked), where, f"rows whose answer breaks its own schema{first}",
                     f"every row's answer breaks its own schema{first}; fix the answers or the schemas")


def _hub_split(split: str):
    """The hub's one split, cut once with a fixed seed: HELD_OUT rows for `test`, the rest for any other split."""
    table = load_table(None, HUB_ID, HUB_SPLIT)
    require_columns(table, ["text", "schema", "item"], f"data {HUB_ID}")
    parts = table.rename_column("item", "answer").train_test_split(test_size=HELD_OUT, seed=SPLIT_SEED)
    return parts["test"] if split == "test" else parts["train"]


def _as_object(value, column: str, where: str) -> dict:
    """A `schema` / `answer` cell as a dict: JSON text, or already parsed by the file reader."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise KitError(f"{where}: '{column}' is empty; every row needs a text, a schema and a gold answer")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as err:
            raise KitError(f"{where}: '{column}' is not JSON ({err}); write it as JSON text, "
                           'e.g. {"name": "Ada", "age": 36}') from None
    if not isinstance(value, dict):
        raise KitError(f"{where}: '{column}' must be a JSON object ({{...}}), not {type(value).__name__}")
    return value


def _checked_row(row: dict, where: str) -> tuple[dict, str | None]:
    """The prepared row, and why its answer breaks its schema (None when it does not)."""
    import jsonschema

    text = row["text"]
    if not isinstance(text, str) or not text.strip():
        raise KitError(f"{where}: 'text' is empty; every row needs the text to extract from")
    schema, answer = _as_object(row["schema"], "schema", where), _as_object(row["answer"], "answer", where)
    validator = jsonschema.validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as err:
        raise KitError(f"{where}: 'schema' is not a valid JSON schema ({err.message})") from None
    schema_text = json.dumps(schema, ensure_ascii=False)
    prepared = {"prompt": to_prompt(text, schema_text), "schema": schema_text,
                "answer": json.dumps(answer, ensure_ascii=False)}
    broken = next(validator(schema).iter_errors(answer), None)
    return prepared, (None if broken is None else broken.message)


def sft_target(row: dict) -> str:
    """The gold object itself, bare: the reply the system prompt asks for."""
    return row["answer"]


# --- scoring: the required form is the object alone (bare or one ```json block) and valid for the schema ---

def json_object(completions, **kwargs) -> list[float]:
    """1.0 when the reply, read as json_format reads it, is a JSON object (not an array, not text around one)."""
    return [float(isinstance(json_reply(completion_text(c)), dict)) for c in completions]


def fields_anywhere(completions, answer, **kwargs) -> list[float | None]:
    """The share of gold fields right in the first JSON object anywhere in the reply, form and schema aside."""
    scores: list[float | None] = []
    for completion, gold in zip(completions, answer):
        expected, found = gold_object(gold), first_json_object(completion_text(completion))
        scores.append(None if expected is None else 0.0 if found is None else field_score(found, expected))
    return scores


# strict: every field right, in an object alone that follows the schema; lenient: every field right anywhere
EVAL = Scoring(strict=(field_accuracy, json_format, json_object), lenient=fields_anywhere,
               formatted=(json_format, json_object))


# --- sample data: people, products and events written by the kit, so smoke runs and tests work offline ---

_FIRST = ["Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jamal", "Kenji", "Lena"]
_LAST = ["Lindqvist", "Okafor", "Moreau", "Patel", "Rossi", "Haddad", "Kim", "Novak", "Silva", "Byrne"]
_CITIES = ["Porto", "Lyon", "Osaka", "Leeds", "Gdansk", "Quito", "Tampere", "Accra", "Perth", "Bergen"]
_PRODUCTS = ["Trail 2 backpack", "Aero kettle", "Nimbus desk lamp", "Orbit headphones", "Cedar chair",
             "Pulse watch", "Drift umbrella", "Atlas tent"]
_EVENTS = ["Spring Robotics Fair", "Harbour Jazz Night", "City Chess Open", "Night Market", "Open Data Day",
           "Winter Book Swap"]
_VENUES = ["Harbour Hall", "the Old Mill", "Central Library", "Riverside Park", "the Glasshouse"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


def _schema(properties: dict) -> str:
    return json.dumps({"type": "object", "properties": properties, "required": list(properties)})


_PERSON = _schema({"name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"}})
_PRODUCT = _schema({"product": {"type": "string"}, "price": {"type": "number"},
                    "currency": {"enum": ["EUR", "USD", "GBP"]}, "in_stock": {"type": "boolean"}})
_EVENT = _schema({"event": {"type": "string"}, "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
                  "venue": {"type": "object", "properties": {"name": {"type": "string"}, "city": {"type": "string"}},
                            "required": ["name", "city"]}})


def _person(rng: random.Random) -> tuple[str, str, dict]:
    name, age, city = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", rng.randint(19, 88), rng.choice(_CITIES)
    return f"{name}, aged {age}, lives in {city}.", _PERSON, {"name": name, "age": age, "city": city}


def _product(rng: random.Random) -> tuple[str, str, dict]:
    product, price = rng.choice(_PRODUCTS), rng.randint(500, 25000) / 100
    currency, in_stock = rng.choice(["EUR", "USD", "GBP"]), rng.random() < 0.5
    text = f"The {product} costs {price:.2f} {currency} and is {'in stock' if in_stock else 'sold out'}."
    return text, _PRODUCT, {"product": product, "price": price, "currency": currency, "in_stock": in_stock}


def _event(rng: random.Random) -> tuple[str, str, dict]:
    event, venue, city = rng.choice(_EVENTS), rng.choice(_VENUES), rng.choice(_CITIES)
    year, month, day = rng.randint(2023, 2026), rng.randint(1, 12), rng.randint(1, 28)
    text = f"The {event} is on {day} {_MONTHS[month - 1]} {year} at {venue}, {city}."
    gold = {"event": event, "date": f"{year}-{month:02d}-{day:02d}", "venue": {"name": venue, "city": city}}
    return text, _EVENT, gold


def write_sample(path: Path, split: str) -> None:
    """64 train or 32 test rows, a third each people, products and events, seeded by split."""
    rng = random.Random(f"json-extract-sample-{split}")
    makers = [_person, _product, _event]
    rows = []
    for index in range(64 if split == "train" else 32):
        text, schema, gold = makers[index % 3](rng)
        rows.append({"text": text, "schema": schema, "answer": json.dumps(gold)})
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows))


# --- sample completions for `python -m kit rewards check json_extract`: what each reward tells apart ---

_GOLD = {"name": "Ava Lindqvist", "age": 34, "city": "Porto"}


def _sample(label: str, completion: str) -> dict:
    return {"label": label, "completion": [{"role": "assistant", "content": completion}],
            "schema": _PERSON, "answer": json.dumps(_GOLD)}


SAMPLE_COMPLETIONS = [
    _sample("right, bare", json.dumps(_GOLD)),
    _sample("right, ```json block", f"```json\n{json.dumps(_GOLD, indent=2)}\n```"),
    _sample("right, other case", '{"name": "ava lindqvist", "age": 34.0, "city": "PORTO"}'),
    _sample("one field wrong", '{"name": "Ava Lindqvist", "age": 43, "city": "Porto"}'),
    _sample("breaks schema: age as text", '{"name": "Ava Lindqvist", "age": "34", "city": "Porto"}'),
    _sample("field missing", '{"name": "Ava Lindqvist", "city": "Porto"}'),
    _sample("text around the object", f"Here it is: {json.dumps(_GOLD)} Hope that helps!"),
    _sample("malformed JSON", '{"name": "Ava Lindqvist", "age": 34, "city": "Porto",}'),
    _sample("empty", ""),
]
