"""The kit's ChatML tool template: it shows tools, calls and results, TRL accepts it, and replies parse back."""

import pytest
from transformers import AutoTokenizer

from kit.errors import KitError
from kit.tools.template import CHATML_TOOL_TEMPLATE, PROBE_CONVERSATION, probe_tool, supports_tools, use_tool_template

CALL = '<tool_call>{"name": "probe_tool", "arguments": {"a": 3, "b": 4}}</tool_call><|im_end|>'


def test_a_template_without_tools_gets_the_kits_and_says_so(tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    assert not supports_tools(tokenizer)
    note = use_tool_template(tokenizer, "kit:tiny-llama")
    assert "kit:tiny-llama's chat template cannot show tool calls" in note and "saved with the model" in note
    assert tokenizer.chat_template == CHATML_TOOL_TEMPLATE and supports_tools(tokenizer)
    assert use_tool_template(tokenizer, "kit:tiny-llama") is None  # a second time changes nothing


def test_the_template_is_prefix_preserving_as_trls_loop_needs(tool_tokenizer):
    from trl.chat_template_utils import is_chat_template_prefix_preserving

    assert is_chat_template_prefix_preserving(tool_tokenizer)


def test_every_part_of_a_tool_conversation_is_rendered(tool_tokenizer):
    text = tool_tokenizer.apply_chat_template(PROBE_CONVERSATION, tools=[probe_tool], add_generation_prompt=True,
                                              tokenize=False)
    assert "Tool probe_tool(a, b): Multiply two numbers." in text and "  b (integer): the second number" in text
    assert '<tool_call>{"name": "probe_tool", "arguments": {"a": 347, "b": 862}}</tool_call><|im_end|>' in text
    assert "<|im_start|>tool\n299114<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")


def test_without_a_system_message_the_tools_get_a_system_turn(tool_tokenizer):
    text = tool_tokenizer.apply_chat_template(PROBE_CONVERSATION[1:2], tools=[probe_tool], tokenize=False)
    assert text.startswith("<|im_start|>system\nTool probe_tool(a, b)")


def test_a_tool_call_parses_back_and_a_broken_one_is_plain_text(tool_tokenizer):
    from trl.chat_template_utils import parse_response

    prompt = tool_tokenizer.apply_chat_template(PROBE_CONVERSATION[:2], tools=[probe_tool], add_generation_prompt=True)
    ids = lambda text: tool_tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
    parsed = parse_response(tool_tokenizer, ids(CALL), prefix=prompt)
    assert parsed["tool_calls"] == [{"type": "function", "function": {"name": "probe_tool",
                                                                      "arguments": {"a": 3, "b": 4}}}]
    broken = parse_response(tool_tokenizer, ids('<tool_call>{"name": "probe_tool", "argu</tool_call><|im_end|>'),
                            prefix=prompt)
    assert "tool_calls" not in broken and broken["content"].startswith("<tool_call>")


def test_a_template_that_is_not_chatml_is_refused_with_what_to_do(tiny_model, monkeypatch):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    monkeypatch.setattr(type(tokenizer), "get_vocab", lambda self: {"<s>": 1})
    with pytest.raises(KitError, match="not ChatML.*use a model whose template does tools"):
        use_tool_template(tokenizer, "some/model")


def test_trls_own_tool_template_is_kept(tiny_model):
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.chat_template = qwen2_5_chat_template
    assert use_tool_template(tokenizer, "Qwen2.5") is None
    assert tokenizer.chat_template == qwen2_5_chat_template and tokenizer.response_template is not None
