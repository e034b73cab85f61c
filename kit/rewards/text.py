"""Getting the generated text out of whatever form TRL hands a completion in, and text into that form."""

from __future__ import annotations

from typing import Any


def completion_text(completion: Any) -> str:
    """Text of one completion: a plain string, or a list of chat messages (the last assistant turn's content:
    with tools, a completion is the assistant's turns and the tool results between them)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        replies = [m for m in completion if not (isinstance(m, dict) and m.get("role") == "tool")]
        return _message_text(replies[-1]) if replies else ""
    if isinstance(completion, dict):
        return _message_text(completion)
    return ""


def as_messages(text_or_messages, role: str):
    """A completion (role assistant) or a prompt (user) in the form training hands it to rewards: messages."""
    return [{"role": role, "content": text_or_messages}] if isinstance(text_or_messages, str) else text_or_messages


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return str(message)
    content = message.get("content", "")
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""
