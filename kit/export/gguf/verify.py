"""Proving a GGUF file works before calling the export done: load it in llama.cpp and compare it with
the merged Hugging Face model it came from.

Checks (required ones decide the exit code):
  tokenizer  required  llama.cpp gives the same ids as the HF tokenizer on a set of strings, including
                       rendered chat turns with their special tokens
  template   required  the chat template is in the GGUF metadata, identical to the tokenizer's
  eos        required  the GGUF's end-of-sequence token is the model's (else generation never stops)
  tools      required where the template shows tool calls: a tool-calling conversation rendered from the
             GGUF's own template by llama-cpp-python's chat formatter is the same text, and llama.cpp's
             tokens of it are the same ids, as transformers renders and tokenizes it
  greedy     required for f16 / bf16 / q8_0: greedy continuations of a few prompts match token for token,
             or first differ where the reference itself nearly ties (its two candidates within NEAR_TIE of
             its largest logit, 3% for q8_0: rounding picks either); reported for lower-bit quantizations
  logits     reported  relative logit error and top-1 agreement along the same sequences

This module is the llama.cpp side; what the HF model says (kit.export.gguf.reference) is computed once per export.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from kit.export.gguf import spm
from kit.export.gguf.load import load_gguf
from kit.export.gguf.quants import EXACT
from kit.export.gguf.reference import GREEDY_TOKENS, Reference

# A real model's greedy path passes near-ties (seen on SmolLM2: margins of 0.003-0.05 logits out of ~28),
# where bf16 or q8_0 rounding flips the choice; a broken export differs where the reference is sure.
NEAR_TIE = 0.005
# q8_0 rounds every weight to 8 bits: on SmolLM2-135M its logits stray up to 7-9% of the largest one, and a
# trained SmolLM2 flipped at a reference margin of 2.2%. Other weights flip at margins near 100%.
NEAR_TIE_BY_QUANT = {"q8_0": 0.03}


@dataclass
class Check:
    name: str
    passed: bool
    required: bool
    detail: str


@dataclass
class Verification:
    file: str
    quant: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.passed for c in self.checks if c.required)

    def to_dict(self) -> dict:
        return {"file": self.file, "quant": self.quant, "ok": self.ok, "checks": [asdict(c) for c in self.checks]}


def verify(path: Path, quant: str, ref: Reference) -> Verification:
    longest = max(len(p) + len(c) for p, c in zip(ref.prompts, ref.continuations)) + GREEDY_TOKENS
    llm = load_gguf(path, n_ctx=max(256, longest), logits_all=True)
    try:
        result = Verification(file=path.name, quant=quant)
        result.checks += [check_tokenizer(llm, ref), check_template(llm, ref), check_eos(llm, ref)]
        result.checks += [check for check in [check_tool_turns(llm, ref)] if check is not None]
        result.checks += check_outputs(llm, ref, required=quant in EXACT, near_tie=near_tie_for(quant))
        return result
    finally:
        llm.close()


def check_tokenizer(llm, ref: Reference) -> Check:
    mismatches = []
    for text in ref.texts:
        expected = ref.tokenizer(text, add_special_tokens=False).input_ids
        got = llm.tokenize(as_llama_cpp_sees(text, ref).encode(), add_bos=False, special=True)
        if expected != got:
            mismatches.append(f"{text[:40]!r}: HF {expected[:8]}... llama.cpp {got[:8]}...")
    detail = f"{len(ref.texts) - len(mismatches)}/{len(ref.texts)} strings identical"
    if ref.start_space_only:
        detail += (" (plain text given to llama.cpp with the leading space transformers adds only at the start "
                   "of an input; chat prompts, which start with a special token, as they are)")
    return Check("tokenizer", not mismatches, True,
                 detail + (f"; first difference {mismatches[0]}" if mismatches else ""))


def as_llama_cpp_sees(text: str, ref: Reference) -> str:
    """The text llama.cpp must get to tokenize as transformers does: the same text, except that plain text
    gets the start-of-input space a start-only SentencePiece tokenizer adds (and llama.cpp cannot)."""
    if not ref.start_space_only or text.startswith(" "):
        return text
    starts_special = any(text.startswith(t) for t in spm.added_tokens(ref.tokenizer))
    return text if starts_special else " " + text


def check_template(llm, ref: Reference) -> Check:
    stored = llm.metadata.get("tokenizer.chat_template")
    if not stored:
        return Check("template", False, True, "no tokenizer.chat_template in the GGUF metadata")
    same = stored == ref.tokenizer.chat_template
    return Check("template", same, True, "identical to the tokenizer's" if same else "differs from the tokenizer's")


def check_tool_turns(llm, ref: Reference) -> Check | None:
    """A tool-calling conversation, as llama.cpp's side renders it from the GGUF and as transformers does;
    None (not checked) for a template that cannot show tool calls."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from transformers.utils import get_json_schema

    from kit.tools.template import PROBE_CONVERSATION, probe_tool, supports_tools

    if not supports_tools(ref.tokenizer):
        return None
    expected = ref.tokenizer.apply_chat_template(PROBE_CONVERSATION, tools=[probe_tool], add_generation_prompt=True,
                                                 tokenize=False)
    token_text = lambda i: llm.detokenize([i], special=True).decode(errors="replace")  # noqa: E731
    formatter = Jinja2ChatFormatter(llm.metadata.get("tokenizer.chat_template") or "",
                                    eos_token=token_text(llm.token_eos()), bos_token=token_text(llm.token_bos()))
    try:
        got = formatter(messages=PROBE_CONVERSATION, tools=[get_json_schema(probe_tool)]).prompt
    except Exception as err:  # noqa: BLE001  (a template llama.cpp's side cannot render fails the check)
        return Check("tools", False, True, f"the GGUF's template raised on a tool-calling conversation: {err}")
    if got != expected:
        at = common_prefix(list(got), list(expected))
        return Check("tools", False, True, f"a tool-calling conversation renders differently from character {at}: "
                                           f"GGUF {got[at:at + 40]!r}, transformers {expected[at:at + 40]!r}")
    same_ids = llm.tokenize(got.encode(), add_bos=False, special=True) == ref.tokenizer(
        expected, add_special_tokens=False).input_ids
    return Check("tools", same_ids, True, "a tool-calling conversation renders to the same text and tokens" if same_ids
                 else "a tool-calling conversation renders to the same text, but llama.cpp tokenizes it differently")


def check_eos(llm, ref: Reference) -> Check:
    eos = llm.token_eos()
    ok = eos in ref.eos_ids
    name = ref.tokenizer.convert_ids_to_tokens(eos) if 0 <= eos < len(ref.tokenizer) else "?"
    return Check("eos", ok, True, f"{name!r} (id {eos})" + ("" if ok else f"; the model ends turns with {ref.eos_ids}"))


def llama_greedy(llm, prompt: list[int], eos: list[int]) -> list[int]:
    llm.reset()
    llm.eval(prompt)
    out: list[int] = []
    for _ in range(GREEDY_TOKENS):
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(token)
        if token in eos:
            break
        llm.eval([token])
    return out


def near_tie_for(quant: str) -> float:
    return NEAR_TIE_BY_QUANT.get(quant, NEAR_TIE)


def check_outputs(llm, ref: Reference, required: bool, near_tie: float = NEAR_TIE) -> list[Check]:
    identical, matched, total, errors, top1, ties, sure = 0, 0, 0, [], [], [], []
    for prompt, expected, hf_logits in zip(ref.prompts, ref.continuations, ref.logits):
        got = llama_greedy(llm, prompt, ref.eos_ids)
        identical += got == expected
        matched += common_prefix(got, expected)
        total += len(expected)
        margin = divergence_margin(got, expected, hf_logits[len(prompt) - 1:])
        if margin is not None:
            (ties if margin <= near_tie else sure).append(margin)
        llm.reset()
        llm.eval(prompt + expected)
        ours = np.asarray(llm.scores[: len(prompt) + len(expected)], dtype=np.float32)
        errors.append(float(np.abs(ours - hf_logits).max() / np.abs(hf_logits).max()))
        top1.append(float((ours.argmax(-1) == hf_logits.argmax(-1)).mean()))
    n = len(ref.prompts)
    detail = f"{identical}/{n} continuations identical, {matched}/{total} tokens agree"
    if ties:
        detail += (f"; {len(ties)} differ first at a near-tie (reference margin {', '.join(f'{m:.2%}' for m in ties)}, "
                   f"within {near_tie:.1%})")
    if sure:
        detail += f"; {len(sure)} differ where the reference is sure (margin {', '.join(f'{m:.2%}' for m in sure)})"
    greedy = Check("greedy", not sure, required, detail)
    logits = Check("logits", True, False, f"relative error {max(errors):.1e}, top-1 agreement {np.mean(top1):.1%}")
    return [greedy, logits]


def divergence_margin(got: list[int], expected: list[int], next_logits: np.ndarray) -> float | None:
    """Where llama.cpp's greedy path first leaves the reference's: how much the reference preferred its own
    token over llama.cpp's there, as a fraction of that row's largest |logit|. None when they agree.

    next_logits[i]: the reference's logits for the token after prompt + expected[:i].
    """
    i = common_prefix(got, expected)
    if i >= min(len(got), len(expected)):
        return None
    row = next_logits[i]
    return float((row[expected[i]] - row[got[i]]) / np.abs(row).max())


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def print_table(results: list[Verification]) -> None:
    names = ["tokenizer", "template", "eos", "tools", "greedy", "logits"]
    width = max(len(r.file) for r in results)
    print(f"{'file':{width}}  " + "  ".join(f"{n:9}" for n in names) + "  verdict")
    for r in results:
        marks = {c.name: ("ok" if c.passed else ("FAIL" if c.required else "differs")) for c in r.checks}
        print(f"{r.file:{width}}  " + "  ".join(f"{marks.get(n, '-'):9}" for n in names)
              + f"  {'PASS' if r.ok else 'FAIL'}")
        for c in r.checks:
            print(f"{'':{width}}    {c.name}: {c.detail}")


def write_report(results: list[Verification], path: Path) -> None:
    """This export's verdicts, beside those of earlier exports whose files are still there: a second
    `kit export --quant q4_k_m` after a q8_0 one keeps the q8_0 verdict."""
    fresh = [r.to_dict() for r in results]
    mine = {Path(r["file"]).name for r in fresh}
    earlier = json.loads(path.read_text()) if path.is_file() else []
    kept = [r for r in earlier if isinstance(r, dict) and Path(str(r.get("file", ""))).name not in mine
            and (path.parent / Path(str(r.get("file", ""))).name).is_file()]
    path.write_text(json.dumps(kept + fresh, indent=2) + "\n")
