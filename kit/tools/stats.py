"""What a batch of tool-using transcripts did: how often the model called a tool, and how that went.

    tool_stats([rollout.messages for rollout in rollouts])
    # {"calling": 0.9, "calls": 1.2, "unparsed": 0.05, "tool_errors": 0.1, "turns": 2.1}

calling      share of transcripts with at least one parsed tool call
calls        tool calls per transcript
unparsed     share of transcripts with a reply that tried a call (`<tool_call>` in its text) that did not parse
tool_errors  share of tool calls whose result was an error (TRL's and kit.eval.rollout's `{'error': ...}`)
turns        assistant turns per transcript
"""

from __future__ import annotations

from statistics import mean

CALL_MARK = "<tool_call>"
ERROR_PREFIX = "{'error': "


def tool_stats(transcripts: list[list[dict]]) -> dict[str, float]:
    if not transcripts:
        return {}
    assistant = [[m for m in t if m.get("role") == "assistant"] for t in transcripts]
    calls = [sum(len(m.get("tool_calls") or []) for m in turns) for turns in assistant]
    results = [m for t in transcripts for m in t if m.get("role") == "tool"]
    errors = sum(str(m.get("content", "")).startswith(ERROR_PREFIX) for m in results)
    return {
        "calling": mean(c > 0 for c in calls),
        "calls": mean(calls),
        "unparsed": mean(any(CALL_MARK in str(m.get("content", "")) for m in turns) for turns in assistant),
        "tool_errors": errors / len(results) if results else 0.0,
        "turns": mean(len(turns) for turns in assistant),
    }


def transcript_text(messages: list[dict]) -> str:
    """A transcript as one readable string: each turn, tool calls as name(arguments), tool results marked."""
    parts = []
    for m in messages:
        if m.get("role") == "tool":
            parts.append(f"[{m.get('name', 'tool')} -> {m.get('content', '')}]")
            continue
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {})
            parts.append(f"[call {fn.get('name')}({fn.get('arguments')})]")
        if m.get("content"):
            parts.append(str(m["content"]))
    return " ".join(parts)
