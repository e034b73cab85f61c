import pytest
from transformers import AutoTokenizer

from kit.errors import KitError
from kit.export.gguf.modelfile import go_template, modelfile_text, render_with_pieces, template_pieces

LLAMA3_STYLE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] + '<|eot_id|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
STRICT_ALTERNATION = (
    "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('roles must alternate') }}{% endif %}{{ message['content'] }}{% endfor %}"
)
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2 plus 3?"},
    {"role": "assistant", "content": "<answer>5</answer>"},
    {"role": "user", "content": "And 4 plus 4?"},
]


@pytest.fixture
def tokenizer(tiny_model):
    return AutoTokenizer.from_pretrained(tiny_model)


@pytest.mark.parametrize("template", [None, LLAMA3_STYLE], ids=["chatml", "llama3-style"])
def test_pieces_reproduce_the_chat_template(tokenizer, template):
    if template:
        tokenizer.chat_template = template
    pieces = template_pieces(tokenizer)
    for messages in (CONVERSATION, CONVERSATION[1:], CONVERSATION[:2]):
        for gen in (False, True):
            expected = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)
            assert render_with_pieces(pieces, messages, gen) == expected


def test_bos_written_by_the_template_is_left_to_llama_cpp(tokenizer):
    tokenizer.chat_template = LLAMA3_STYLE
    pieces = template_pieces(tokenizer)
    assert pieces.prelude == tokenizer.bos_token
    assert pieces.around["user"] == ("<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>")


def test_chatml_modelfile(tokenizer):
    text = modelfile_text("run.Q4_K_M.gguf", tokenizer, [tokenizer.eos_token_id])
    assert text.splitlines()[0] == "FROM ./run.Q4_K_M.gguf"
    assert '{{ if eq .Role "system" }}<|im_start|>system\n{{ .Content }}<|im_end|>\n' in text
    assert text.rstrip().endswith('PARAMETER stop "<|im_end|>"')
    assert "{{-" not in text  # trim markers would eat the template's newlines


def test_literal_braces_are_escaped(tokenizer):
    tokenizer.chat_template = "{% for m in messages %}{{ '{{' + m['content'] + '}}' }}{% endfor %}"
    assert '{{ "{{" }}' in go_template(template_pieces(tokenizer))


def test_template_that_cannot_be_cut_into_pieces_says_so(tokenizer):
    tokenizer.chat_template = STRICT_ALTERNATION
    with pytest.raises(KitError, match="cannot derive an Ollama template.*write the Modelfile's TEMPLATE by hand"):
        template_pieces(tokenizer)
