"""Fuzz: any reply a model can write, through the whole tool path, and nothing escapes.

Replies are built from the red team's pieces (lone surrogates as JSON escapes and as characters, NUL and
control characters, nesting far past Python's recursion limit, huge numbers, names that are numbers, lists or
null, arguments that are not objects, floods of calls, megabytes of brackets) and driven through: TRL's
`parse_response` with the kit's guard, the toolbox and its budget, the rollout evaluation runs (the whole
conversation re-rendered and tokenized each turn), TRL's own `_get_tool_suffix_ids` with the kit's template
(what renders tool results in training), the python_tool recipe's rewards, and the tool statistics. No
exception may escape, and every reply whose call cannot run as written is counted in `unparsed`.

A few dozen examples in the developer's loop; many more under `pytest --all`.
"""

import json
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.eval import rollout
from kit.models.generate import Sampling
from kit.recipes import load_recipe
from kit.tools.budget import ToolBudget
from kit.tools.reply_guard import safe_text
from kit.tools.stats import tool_stats
from kit.tools.toolbox import Toolbox


def python(code: str) -> str:
    """Run Python code (here: echo it, so the fuzz runs no sandbox).

    Args:
        code: the code
    """
    return code[:200]


ODD_TEXT = st.one_of(
    st.text(st.characters(codec=None, categories=None), max_size=40),  # lone surrogates, NUL, controls
    st.sampled_from(["\ud800", "\udfff\x00", "\\ud800", "\u202e", "\x1b[2J", "}" * 50, "<tool_call>", "</tool_call>"]),
)
JSON_TEXT = st.one_of(
    ODD_TEXT.map(lambda s: json.dumps(s, ensure_ascii=True)),  # surrogates as the escapes a model writes
    st.sampled_from(['"\\ud800"', '"\\udfff\\u0000"', '"python"', "5", "-1e999", "null", "true", '["python"]', "{}",
                     "9" * 5000, "1" * 4301, "NaN", "Infinity", '"\\"', "[" * 1500, "{" * 1200]),
    st.integers(1, 3000).map(lambda n: "[" * n + "1" + "]" * n),  # deep but closed
    st.integers(1, 3000).map(lambda n: '{"a": ' * n + "1" + "}" * n),
)
CALL = st.builds(lambda name, arguments: f'<tool_call>{{"name": {name}, "arguments": {arguments}}}</tool_call>',
                 st.one_of(JSON_TEXT, st.just('"python"')),
                 st.one_of(JSON_TEXT, st.builds(lambda v: f'{{"code": {v}}}', JSON_TEXT)))
# A reply is decoded token ids, so a lone surrogate is in it only as the six characters of its escape (which
# json.loads turns back into one): that is what a raw one in the pieces above becomes.
REPLY = st.builds(lambda prefix, calls, suffix: safe_text(prefix + "".join(calls) + suffix),
                  ODD_TEXT, st.lists(CALL, min_size=0, max_size=25), st.one_of(ODD_TEXT, st.just("[" * 20000)))


def scripted(tokenizer, replies: list[str]):
    """generate_ids for kit.eval.rollout: each round's reply for every conversation, the last one repeated."""
    rounds = iter(replies)

    def generate_ids(model, tok, prompt_ids, sampling, batch_size, lora_request, progress):
        reply = next(rounds, replies[-1])
        return [tokenizer(reply, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]] * len(prompt_ids)

    return generate_ids


def suffix_ids(tokenizer, tool_messages):
    """TRL's own rendering of tool results into the training sequence, run on the kit's tokenizer and template."""
    from trl import GRPOTrainer

    trainer = types.SimpleNamespace(processing_class=tokenizer, _tokenizer=tokenizer, chat_template=None,
                                    chat_template_kwargs={}, _is_vlm=False)
    return GRPOTrainer._get_tool_suffix_ids(trainer, tool_messages)


def drive(tokenizer, replies: list[str], monkeypatch):
    from trl.chat_template_utils import parse_response

    for reply in replies:  # TRL's parse, as its loop calls it
        parse_response(tokenizer, tokenizer(reply, add_special_tokens=False).input_ids)
    monkeypatch.setattr(rollout, "generate_ids", scripted(tokenizer, replies))
    recipe = load_recipe("python_tool")
    rows = [{"prompt": [{"role": "user", "content": "What is 2 times 3?"}], "answer": "6"}]
    toolbox = Toolbox((python,))
    done = rollout.roll_out(None, tokenizer, rows, toolbox, Sampling(max_new_tokens=100_000,
                            tool_budget=ToolBudget(calls_per_turn=8)), max_rounds=3, progress=False)
    messages = done[0].messages
    tool_messages = [m for m in messages if m["role"] == "tool"]
    if tool_messages:
        suffix_ids(tokenizer, tool_messages[-8:])
    for reward in recipe.rewards.funcs:
        reward(completions=[messages], answer=["6"], prompts=[rows[0]["prompt"]])
    return messages


def malformed_or_unparsed(reply: dict) -> bool:
    if "<tool_call>" in reply.get("content", ""):
        return True
    return any(not (c["function"]["name"].isidentifier() and isinstance(c["function"]["arguments"], dict))
               for c in reply.get("tool_calls") or [])


def check(tokenizer, replies, monkeypatch):
    messages = drive(tokenizer, replies, monkeypatch)
    for m in messages:
        json.dumps(m, ensure_ascii=False).encode("utf-8")  # nothing unrenderable is left in the transcript
    first = next(m for m in messages if m["role"] == "assistant")
    if malformed_or_unparsed(first):
        assert tool_stats([messages])["unparsed"] == 1.0


FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=30, **FUZZ)
@given(replies=st.lists(REPLY, min_size=1, max_size=3))
def test_no_reply_escapes_the_tool_path(tool_tokenizer, monkeypatch, replies):
    check(tool_tokenizer, replies, monkeypatch)


@pytest.mark.slow
@settings(max_examples=300, **FUZZ)
@given(replies=st.lists(REPLY, min_size=1, max_size=3))
def test_no_reply_escapes_the_tool_path_at_length(tool_tokenizer, monkeypatch, replies):
    check(tool_tokenizer, replies, monkeypatch)


@pytest.mark.parametrize("reply", [
    '<tool_call>{"name": "\\ud800", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "python", "arguments": {"code": "\\udfff"}}</tool_call>',
    '<tool_call>{"name": "python", "arguments": {"code": ' + "[" * 975,
    '<tool_call>{"name": "python", "arguments": {"code": ' + "[" * 2000 + "]" * 2000 + "}}</tool_call>",
    '<tool_call>{"name": null, "arguments": {}}</tool_call>',
    '<tool_call>{"name": 5, "arguments": []}</tool_call>',
    '<tool_call>{"name": "python", "arguments": {"code": "1"}}</tool_call>' * 40,
])
def test_the_red_teams_replies(tool_tokenizer, monkeypatch, reply):
    check(tool_tokenizer, [reply], monkeypatch)
