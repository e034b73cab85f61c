"""An Ollama Modelfile whose TEMPLATE and stop tokens match the model's own chat template.

Ollama templates are Go templates, not Jinja. Rather than translate Jinja, the kit renders the
model's template with marker messages and cuts out what it puts around each role's content, then
writes those pieces into a Go template. `render_with_pieces` re-renders a conversation from the
pieces, so a test can compare it with the tokenizer's own rendering.
"""

from __future__ import annotations

from dataclasses import dataclass

from kit.errors import KitError

_MARK = "\u2063KIT-MARK\u2063"
_BASE = [{"role": "system", "content": "\u2063KIT-BASE\u2063"}]


@dataclass
class TemplatePieces:
    prelude: str  # before the first message (e.g. a BOS the template writes itself)
    around: dict[str, tuple[str, str]]  # role -> (text before content, text after content)
    generation_prompt: str  # what opens the assistant's reply


def template_pieces(tokenizer) -> TemplatePieces:
    """Cut the chat template into per-role pieces; KitError if it is not built from per-message blocks."""
    render = lambda messages, gen=False: tokenizer.apply_chat_template(  # noqa: E731
        messages, tokenize=False, add_generation_prompt=gen)
    try:
        base = render(_BASE)
        around = {role: _split(_after(render(_BASE + [{"role": role, "content": _MARK}]), base))
                  for role in ("user", "assistant")}
        system_block = render([{"role": "system", "content": _MARK}])
        with_user = render(_BASE + [{"role": "user", "content": _MARK}])
        generation_prompt = _after(render(_BASE + [{"role": "user", "content": _MARK}], gen=True), with_user)
    except Exception as err:  # a template may raise on any of these probes (e.g. strict role alternation)
        raise KitError(f"cannot derive an Ollama template from this chat template ({err}); "
                       "write the Modelfile's TEMPLATE by hand") from None
    start, end = _split(system_block)
    prelude = ""
    bos = tokenizer.bos_token or ""
    if bos and start.startswith(bos):
        prelude, start = bos, start[len(bos):]
    around["system"] = (start, end)
    return TemplatePieces(prelude=prelude, around=around, generation_prompt=generation_prompt)


def _after(text: str, prefix: str) -> str:
    if not text.startswith(prefix):
        raise ValueError("rendering a longer conversation changed the start of the text")
    return text[len(prefix):]


def _split(block: str) -> tuple[str, str]:
    if block.count(_MARK) != 1:
        raise ValueError("the message content does not appear exactly once")
    before, after = block.split(_MARK)
    return before, after


def render_with_pieces(pieces: TemplatePieces, messages: list[dict], add_generation_prompt: bool) -> str:
    text = pieces.prelude
    for message in messages:
        before, after = pieces.around[message["role"]]
        text += before + message["content"] + after
    return text + (pieces.generation_prompt if add_generation_prompt else "")


def go_template(pieces: TemplatePieces) -> str:
    """The same rendering as a Go template over Ollama's .Messages (no trim markers: whitespace matters)."""
    branches = []
    for keyword, role in (("if", "system"), ("else if", "user"), ("else if", "assistant")):
        before, after = pieces.around[role]
        branches.append(f'{{{{ {keyword} eq .Role "{role}" }}}}{_go(before)}{{{{ .Content }}}}{_go(after)}')
    body = "".join(branches) + "{{ end }}"
    return f"{_go(pieces.prelude)}{{{{ range .Messages }}}}{body}{{{{ end }}}}{_go(pieces.generation_prompt)}"


def _go(text: str) -> str:
    """Literal text inside a Go template: only '{{' would be read as an action."""
    return text.replace("{{", '{{ "{{" }}')


def stop_tokens(tokenizer, eos_ids: list[int]) -> list[str]:
    tokens = [tokenizer.convert_ids_to_tokens(i) for i in eos_ids]
    return list(dict.fromkeys(t for t in tokens if t))


def modelfile_text(gguf_name: str, tokenizer, eos_ids: list[int]) -> str:
    template = go_template(template_pieces(tokenizer))
    if '"""' in template:
        raise KitError("the chat template contains triple quotes, which a Modelfile cannot hold")
    lines = [f"FROM ./{gguf_name}", f'TEMPLATE """{template}"""']
    lines += [f'PARAMETER stop "{token}"' for token in stop_tokens(tokenizer, eos_ids)]
    return "\n".join(lines) + "\n"
