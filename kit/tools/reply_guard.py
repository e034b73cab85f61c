"""Model output is data: a reply's tool calls made safe to run, render and tokenize, whatever the model wrote.

    guard = guard_replies(tokenizer)        # tokenizer.parse_response, as TRL's loop and kit.eval.rollout call it

A policy can write any string. Two kinds of it used to end a run with a traceback:
- JSON nested past Python's recursion limit (`{"code": [[[[...`, ~500 tokens) raises RecursionError in the
  parser, which transformers and TRL do not catch. The guard turns it into the ValueError TRL's `parse_response`
  catches, so the reply is a plain answer, as for any call that does not parse.
- A lone surrogate (`"\\ud800"` in JSON) parses to a str the Rust tokenizer refuses when the next turn is
  rendered. The guard escapes surrogates in names and arguments (`\\ud800` as six characters).
A name that is not a string (5, ["python"], null) becomes `(not a name: 5)` and arguments that are not an object
are kept as written: TRL then answers the call with an `{'error': ...}` result ("Tool 5 not found.", "argument
after ** must be a mapping"), which the model reads, and kit.tools.stats counts the call in tools/unparsed.
Arguments nested deeper than MAX_DEPTH are replaced by a note, so rendering them cannot recurse either.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32  # nesting of a call's arguments; real tools take flat arguments
MAX_NAME = 100  # characters of a tool name kept (names are short; the rest is noise)


def safe_text(text: str) -> str:
    """`text` with lone surrogates written as escapes: every str the tokenizer must encode goes through this."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def safe_value(value: Any) -> Any:
    """A parsed JSON value with every string (keys too) made safe; checked by `deeper` first, so it is shallow."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(str(k)): safe_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [safe_value(v) for v in value]
    return value


def deeper(value: Any, depth: int) -> bool:
    """Whether `value`, found at `depth`, nests past MAX_DEPTH (iteratively: it may be deeper than the stack)."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if level > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack += [(v, level + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, level + 1) for v in item]
    return False


def safe_name(name: Any) -> str:
    """A tool name the template can render: a str as written (surrogates escaped); anything else said as not a
    name, `(not a name: null)`, so no tool has it and kit.tools.stats counts the call as malformed."""
    text = name if isinstance(name, str) else f"(not a name: {json.dumps(name, ensure_ascii=True, default=repr)})"
    text = safe_text(text)
    return text if len(text) <= MAX_NAME else text[:MAX_NAME] + "..."


def safe_call(call: Any) -> dict:
    """One parsed tool call in TRL's shape, {"type", "function": {"name", "arguments"}}, safe to render."""
    call = call if isinstance(call, dict) else {"function": {"name": call}}
    function = call.get("function", call)
    function = function if isinstance(function, dict) else {"name": function}
    arguments = function.get("arguments")
    if arguments is None:
        arguments = {}
    elif deeper(arguments, 0):
        arguments = f"(arguments nested deeper than {MAX_DEPTH} levels, not shown)"
    else:
        arguments = safe_value(arguments)
    return {"type": "function", "function": {"name": safe_name(function.get("name")), "arguments": arguments}}


def safe_reply(parsed: Any) -> Any:
    """A parsed reply with its tool calls made safe (a reply without calls is returned as it is)."""
    if not isinstance(parsed, dict) or not parsed.get("tool_calls"):
        return parsed
    calls = parsed["tool_calls"]
    return {**parsed, "tool_calls": [safe_call(c) for c in (calls if isinstance(calls, list) else [calls])]}


class ReplyGuard:
    """Stands in for `tokenizer.parse_response`: the tokenizer's parser, made safe (module docstring).

    It also counts the replies it parsed. TRL parses every reply of a round before it runs that round's tool
    calls, one rollout after another, so a rollout whose call sees a new count has started a new turn
    (kit.tools.budget's calls per turn)."""

    def __init__(self, parse):
        self.parse = parse
        self.replies = 0

    def __call__(self, *args, **kwargs):
        self.replies += 1
        try:
            parsed = self.parse(*args, **kwargs)
        except (ValueError, TypeError):
            raise
        except Exception as err:  # noqa: BLE001  (RecursionError above all: TRL falls back to the plain text)
            raise ValueError(f"the reply's tool call cannot be parsed ({type(err).__name__})") from None
        return [safe_reply(p) for p in parsed] if isinstance(parsed, list) else safe_reply(parsed)


def guard_replies(tokenizer) -> ReplyGuard:
    """Put a ReplyGuard in front of `tokenizer.parse_response` (once) and return it."""
    current = tokenizer.parse_response
    if isinstance(current, ReplyGuard):
        return current
    guard = ReplyGuard(current)
    tokenizer.parse_response = guard
    return guard
