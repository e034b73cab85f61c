"""Chat templates that can show tool calls, and the parser that reads them back out of a reply.

TRL's tool loop needs both: the template renders the tool schemas, the assistant's calls and the tool
results; the tokenizer's `response_template` parses a reply into {"content", "tool_calls"}. Qwen2.5/3 and
Llama-3.x ship with both. SmolLM2's template and the kit's tiny model's drop tool calls, so for a ChatML
model the kit puts in its own ChatML tool template (below) and TRL's parser for `<tool_call>{json}</tool_call>`
replies (the one it uses for Qwen). The tokenizer keeps both, so the merged model, the GGUF and the
Modelfile are saved with the template the model trained with.

The kit's template is short on purpose: each tool is one signature line in the system turn, its
arguments one line each, where Qwen2.5's spends ~220 tokens of instructions on one tool. On a CPU the
prompt's length is most of a rollout's cost.
"""

from __future__ import annotations

import copy

from kit.errors import KitError

CHATML_START = "<|im_start|>"
# The kit's tiny SentencePiece tokenizer decodes "<|im_start|>assistant" with a space between: allow one.
ASSISTANT_ANCHOR = r"<\|im_start\|>\s?assistant\n"


# ChatML; the tools listed in the system turn (one is added when there are tools and none is given); an
# assistant turn's calls as <tool_call>{"name": ..., "arguments": ...}</tool_call> lines after its text;
# a tool's result as a `tool` turn. Prefix-preserving: each message renders on its own.
CHATML_TOOL_TEMPLATE = (
    "{%- macro tool_lines(tools) %}"
    "{%- for tool in tools %}{%- set fn = tool.function if tool.function is defined else tool %}"
    "{%- set args = fn.parameters.properties if fn.parameters is defined else {} %}"
    "{{- 'Tool ' + fn.name + '(' + (args | join(', ')) + '): ' + fn.description + '\\n' }}"
    "{%- for name, arg in args.items() %}"
    "{{- '  ' + name + ' (' + arg.type + '): ' + (arg.description or '') + '\\n' }}{%- endfor %}"
    "{%- endfor %}"
    "{{- 'Call a tool as <tool_call>{\\\"name\\\": ..., \\\"arguments\\\": {...}}</tool_call>.' }}"
    "{%- endmacro %}"
    "{%- if tools and messages[0].role != 'system' %}"
    "{{- '<|im_start|>system\\n' + tool_lines(tools) + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') }}"
    "{%- if message.role == 'system' and tools %}{{- '\\n\\n' + tool_lines(tools) }}{%- endif %}"
    "{%- for call in (message.tool_calls or []) %}{%- set fn = call.function if call.function is defined else call %}"
    "{{- ('\\n' if message.content or not loop.first else '') + '<tool_call>' }}"
    "{{- {'name': fn.name, 'arguments': fn.arguments} | tojson }}{{- '</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def supports_tools(tokenizer) -> bool:
    """Whether the chat template renders tool schemas, calls and results (TRL's own probe)."""
    from trl.chat_template_utils import supports_tool_calling

    return supports_tool_calling(tokenizer)


def chatml_tool_parser() -> dict:
    """TRL's parser for `<tool_call>{json}</tool_call>` replies, anchored for either ChatML spelling."""
    from trl.chat_template_utils import qwen3_template

    parser = copy.deepcopy(qwen3_template)
    del parser["start_anchor"]
    parser["start_anchor_pattern"] = ASSISTANT_ANCHOR
    return parser


def use_tool_template(tokenizer, model_name: str) -> str | None:
    """Make `tokenizer` render and parse tool calls. Returns a line saying what it changed, or None.

    A template that already does tools keeps it (with TRL's parser for it); a ChatML one that does not gets
    the ChatML tool template; any other is refused with what to do, before training.
    """
    from kit.tools.reply_guard import guard_replies

    note = chat_template_for_tools(tokenizer, model_name)
    guard_replies(tokenizer)  # whatever the model writes, parsing its reply cannot crash the run
    return note


def chat_template_for_tools(tokenizer, model_name: str) -> str | None:
    from trl.chat_template_utils import add_response_schema

    if supports_tools(tokenizer):
        if getattr(tokenizer, "response_template", None) is None:
            try:
                add_response_schema(tokenizer)
            except ValueError:
                raise KitError(f"{model_name}'s chat template renders tool calls, but TRL has no parser for it: "
                               "set tokenizer.response_template, or use a Qwen2.5/Qwen3/Llama-3.x model") from None
        return None
    if CHATML_START not in tokenizer.get_vocab():
        raise KitError(f"{model_name}'s chat template cannot show tool calls and is not ChatML, so the kit has no "
                       "tool template for it: use a model whose template does tools (Qwen2.5, Qwen3, Llama-3.x), or "
                       "a ChatML one (SmolLM2)")
    tokenizer.chat_template = CHATML_TOOL_TEMPLATE
    tokenizer.response_template = chatml_tool_parser()
    return (f"tools: {model_name}'s chat template cannot show tool calls; using the kit's ChatML tool template "
            "(tools listed in the system turn, calls as <tool_call> JSON), which is saved with the model")


def probe_tool(a: int, b: int) -> int:
    """Multiply two numbers.

    Args:
        a: the first number
        b: the second number
    """
    return a * b


# A tool-calling conversation with every part a template must show: the tool, a call, its result, a reply.
PROBE_CONVERSATION = [
    {"role": "system", "content": "Use the tools."},
    {"role": "user", "content": "What is 347 times 862?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "probe_tool", "arguments": {"a": 347, "b": 862}}}]},
    {"role": "tool", "name": "probe_tool", "content": "299114"},
    {"role": "assistant", "content": "<answer>299114</answer>"},
    {"role": "user", "content": "And 12 times 3?"},
]
