"""Multi-turn rollouts outside training, the way TRL's trainer runs them: generate, parse, call, repeat.

    transcripts = roll_out(model, tokenizer, rows, toolbox, Sampling(max_new_tokens=384), max_rounds=4)

Evaluation (kit.eval.evaluate) and `kit chat` use this; training uses TRL's own loop (GRPOTrainer's
`_tool_call_loop`), whose rules this follows so the held-out numbers mean what the training rewards mean:
the reply is parsed with TRL's `parse_response` (a call that does not parse is a plain answer); each call
is `fn(**arguments)` and anything it raises, an unknown name included, becomes the tool result
`{'error': ...}`; results are `str(result)`; at most `max_rounds` rounds of tool calls, and each rollout's
calls within `sampling.tool_budget` (kit.tools.budget); replies parsed through kit.tools.reply_guard; and
`sampling.max_new_tokens` is one budget for the whole completion, tool results included, the round that
would overflow it undone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kit.models.generate import Sampling, generate_ids, prompt_token_ids
from kit.tools.toolbox import Toolbox


@dataclass
class Rollout:
    """One rollout: the completion's messages (assistant turns, tool results) and its environment, if any."""

    messages: list[dict]
    environment: object = None


def roll_out(model, tokenizer, rows: list[dict], toolbox: Toolbox, sampling: Sampling, max_rounds: int | None,
             batch_size: int = 32, lora_request=None, progress: bool = True) -> list[Rollout]:
    """Each row's prompt answered, with as many rounds of tool calls as the model makes (at most max_rounds)."""
    episodes = [toolbox.episode(row, sampling.tool_budget) for row in rows]
    prompts = [with_observation(row["prompt"], e.observation) for row, e in zip(rows, episodes)]
    tools = toolbox.functions()
    chat_kwargs = sampling.chat_template_kwargs
    start = [len(ids) for ids in prompt_token_ids(tokenizer, prompts, chat_kwargs, tools)]
    completions: list[list[dict]] = [[] for _ in rows]
    active, rounds = list(range(len(rows))), 0
    while active:
        contexts = prompt_token_ids(tokenizer, [prompts[i] + completions[i] for i in active], chat_kwargs, tools)
        budgets = {i: sampling.max_new_tokens - (len(ids) - start[i]) for ids, i in zip(contexts, active)}
        active, contexts = within_budget(active, contexts, budgets, completions)
        if not active:
            break
        replies = generate_ids(model, tokenizer, contexts, replace(sampling, max_new_tokens=max(budgets.values())),
                               batch_size, lora_request, progress)
        calling = []
        for i, context, reply in zip(active, contexts, replies):
            message = parsed_reply(tokenizer, reply[:budgets[i]], context)
            completions[i].append(message)
            if message.get("tool_calls") and (max_rounds is None or rounds < max_rounds):
                completions[i] += episodes[i].call(message["tool_calls"])
                calling.append(i)
        rounds += 1
        active = calling
    return [Rollout(c, e.environment) for c, e in zip(completions, episodes)]


def with_observation(prompt: list[dict], observation) -> list[dict]:
    """reset()'s text appended to the last prompt message, as TRL does; the row's own prompt is not changed."""
    if observation is None:
        return list(prompt)
    last = dict(prompt[-1])
    last["content"] = f"{last['content']}{observation}"
    return [*prompt[:-1], last]


def parsed_reply(tokenizer, reply_ids: list[int], context_ids: list[int]) -> dict:
    from trl.chat_template_utils import parse_response

    return parse_response(tokenizer, reply_ids, prefix=context_ids)


def within_budget(active: list[int], contexts: list[list[int]], budgets: dict[int, int], completions):
    """The rows with budget left for another turn, and their contexts. A row whose tool results used up the
    budget ends there, that round's results undone (as TRL does); the first turn always has its budget."""
    going_on = []
    for i, ids in zip(active, contexts):
        if budgets[i] > 0:
            going_on.append((i, ids))
            continue
        while completions[i] and completions[i][-1]["role"] == "tool":
            completions[i].pop()
    return [i for i, _ in going_on], [ids for _, ids in going_on]
