"""What a batch of tool-using transcripts did: how often the model called a tool, and how that went.

    tool_stats([rollout.messages for rollout in rollouts])
    # {"calling": 0.9, "calls": 1.2, "unparsed": 0.05, "over_budget": 0.0, "tool_errors": 0.1, "turns": 2.1}

calling      share of transcripts with at least one parsed tool call
calls        tool calls per transcript
unparsed     share of transcripts with a reply that tried a call that did not parse (`<tool_call>` left in its
             text) or that cannot run as written: a name that is not one (kit.tools.reply_guard writes null as
             `(not a name: null)`), arguments that are not an object
over_budget  share of transcripts whose tool use ended at the rollout's budget (kit.tools.budget)
tool_errors  share of tool calls whose result was an error (TRL's and kit.eval.rollout's `{'error': ...}`)
turns        assistant turns per transcript
"""

from __future__ import annotations

from statistics import mean

from kit.tools.budget import SPENT

CALL_MARK = "<tool_call>"
ERROR_PREFIX = "{'error': "
OVER_BUDGET = f"{ERROR_PREFIX}'{SPENT}"  # how TRL and kit.eval.rollout write a BudgetSpent as the call's result


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
        "unparsed": mean(any(unparsed(m) for m in turns) for turns in assistant),
        "over_budget": mean(any(str(m.get("content", "")).startswith(OVER_BUDGET)
                                for m in t if m.get("role") == "tool") for t in transcripts),
        "tool_errors": errors / len(results) if results else 0.0,
        "turns": mean(len(turns) for turns in assistant),
    }


def unparsed(reply: dict) -> bool:
    """A reply whose call did not parse (its text still holds one), or a parsed call that cannot run as written."""
    return CALL_MARK in str(reply.get("content", "")) or any(malformed(c) for c in reply.get("tool_calls") or [])


def malformed(call: dict) -> bool:
    function = call.get("function", call) if isinstance(call, dict) else {}
    name = function.get("name") if isinstance(function, dict) else None
    return not (isinstance(name, str) and name.isidentifier() and isinstance(function.get("arguments"), dict))


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
