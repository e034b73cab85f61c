"""How the model uses its tools, during GRPO: the tools/* metrics each step logs, and the checks on them.

ToolStats adds kit.tools.stats' numbers for the latest batch to the step's logs; tool_checks (run by
kit.monitor.health's monitor for a recipe with tools) says in plain words when the model stops calling its tools,
never learned the call format, or floods them past the rollout's budget.
"""

from __future__ import annotations

from statistics import mean

from transformers import TrainerCallback

from kit.tools.stats import tool_stats


class ToolStats(TrainerCallback):
    """Adds what the latest batch did with its tools (kit.tools.stats: tools/calling, tools/unparsed,
    tools/over_budget, tools/turns) to each step's logs, before the metrics file and the health checks read them.

    TRL logs tools/call_frequency and tools/failure_frequency itself; a call that does not parse it counts
    as a plain answer, so that share is the kit's to count."""

    def __init__(self):
        self.trainer = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.trainer is None or logs is None or "reward" not in logs:
            return
        transcripts = [c for c in self.trainer._logs["completion"] if isinstance(c, list)]
        stats = tool_stats(transcripts)
        logs.update({f"tools/{name}": stats[name] for name in ("calling", "unparsed", "over_budget", "turns")
                     if name in stats})


def tool_checks(recent: list[dict]):
    """The model's use of its tools over the last 5 logged steps, from the tools/* metrics ToolStats adds."""
    last = [m for m in recent if "tools/calling" in m][-5:]
    over = max((m.get("tools/over_budget", 0.0) for m in last), default=0.0)
    if over > 0:  # at once: a flood stalls every step it is in
        yield "tools_over_budget", (f"{over:.0%} of a recent step's completions used up their tool budget (more "
                                    "than grpo.tool_calls_per_turn calls in a reply, or grpo.tool_seconds_per_rollout "
                                    "of tool time): the model floods the tool; see the run's samples. The budget "
                                    "ended those rollouts' tool use, so the run goes on.")
    if len(last) < 5:
        return
    calling = mean(m["tools/calling"] for m in last)
    earlier = [m["tools/calling"] for m in recent if "tools/calling" in m][:-5]
    if calling == 0 and earlier and max(earlier) >= 0.25:
        yield "tools_stopped", (f"the model stopped calling tools: none of the last 5 steps' completions calls one "
                                f"(up to {max(earlier):.0%} did before). A reward may pay answers without the tool "
                                "as well: check the samples, and pay for the outcome the tool makes possible.")
    elif calling == 0:
        yield "tools_unused", ("no completion calls a tool (last 5 steps): the model does not know the tool format. "
                               "Start with a warm start on tool-call transcripts (stages: [sft, grpo], an sft_target "
                               "that returns the messages), or use a model trained for tool calls.")
    unparsed = mean(m.get("tools/unparsed", 0.0) for m in last)
    if unparsed > 0.5:
        yield "tools_unparsed", (f"{unparsed:.0%} of completions write a tool call that does not parse (last 5 "
                                 "steps), so no tool runs: the call must be <tool_call>{\"name\": ..., "
                                 "\"arguments\": {...}}</tool_call>, as the template shows; see the run's samples.")
