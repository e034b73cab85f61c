"""A tiny chat model built on the spot, so the whole pipeline runs offline on a CPU.

The smoke profile and the tests use it instead of a hub model: a 2-layer Llama (1.4M parameters, 256 wide)
with a SentencePiece tokenizer trained on a small corpus and a ChatML chat template, pretrained for a
few seconds on chat turns in the `<reasoning>/<answer>` format. That pretraining makes its predictions
confident (so greedy output is stable under f16 / q8_0 rounding, which GGUF verification relies on)
and gives GRPO's format rewards something to score. It does not do arithmetic. Built once and cached.

The tokenizer follows llama.cpp's SentencePiece rules (a "▁" prefix on every text segment, spaces kept
as they are), so the HF tokenizer and a GGUF export of it give the same ids.

    python -c "from kit.models.tiny import tiny_model_path; print(tiny_model_path())"
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass
from pathlib import Path

from kit.atomic import build_locked
from kit.cache import cache_dir

_VERSION = 4  # bump when the recipe below changes, so caches rebuild

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|im_start|>", "<|im_end|>"]

# Enough text for the tokenizer to learn words, digits and the tags the recipes ask for; anything
# else still tokenizes through byte fallback.
_CORPUS = [
    "You are a helpful assistant. Respond in the following format:",
    "<reasoning>\nThink step by step.\n</reasoning>\n<answer>\n42\n</answer>",
    "system user assistant question answer reasoning the a of to and in is was for on that with",
    "What is 4 plus 7 plus 2? How many apples does she have left? The total is 13.",
    "Natalia sold clips to 48 of her friends in April, and then half as many in May.",
    "Tom has 12 marbles. He gives 5 to Ann. 12 - 5 = 7. He has 7 marbles left.",
    "A shirt costs $15 and a hat costs $8. Together they cost $23. That is 35% off.",
    "def add(a, b):\n    return a + b\n```python\nprint(add(1, 2))\n```",
    '{"name": "Ada", "age": 36, "city": "London"}',
    "0 1 2 3 4 5 6 7 8 9 10 100 1,000 3/4 0.5 -3 = + - * / ( ) . , ? ! :",
]
def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaConfig, LlamaForCausalLM


def _qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    return Qwen2Config, Qwen2ForCausalLM


_ARCHITECTURES = {"llama": _llama, "qwen2": _qwen2}
_SYSTEM = "Respond in the following format:\n<reasoning>\n...\n</reasoning>\n<answer>\n...\n</answer>"


def chat_corpus(count: int = 256, seed: int = 0) -> list[tuple[str, str]]:
    """(prompt, completion) pairs: a ChatML prompt about a small sum, an answer in the tag format."""
    rng = random.Random(seed)
    turns = []
    for _ in range(count):
        a, b = rng.randint(1, 50), rng.randint(1, 50)
        prompt = (f"<|im_start|>system\n{_SYSTEM}<|im_end|>\n<|im_start|>user\nWhat is {a} plus {b}?<|im_end|>\n"
                  "<|im_start|>assistant\n")
        completion = f"<reasoning>\n{a} + {b} = {a + b}\n</reasoning>\n<answer>\n{a + b}\n</answer><|im_end|>"
        turns.append((prompt, completion))
    return turns


@dataclass(frozen=True)
class TinySpec:
    architecture: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    pretrain: bool  # a few seconds on tagged chat turns; the demo model starts from random weights instead


SPECS = {
    # rows of 256: llama.cpp's k-quants (q4_k_m ...) need them, else fall back to simpler types
    "llama": TinySpec("llama", 256, 512, 2, 4, 2, pretrain=True),
    "qwen2": TinySpec("qwen2", 256, 512, 2, 4, 2, pretrain=True),
    # the CPU demo's learner (sums of three digits): deeper and narrower, trained from scratch
    "demo": TinySpec("llama", 128, 256, 4, 4, 4, pretrain=False),
}


def tiny_model_path(spec: str = "llama") -> Path:
    """Path of a cached tiny model ("llama", "qwen2" or "demo"), building it first if needed."""
    if spec not in SPECS:
        raise ValueError(f"unknown tiny model {spec!r}; choose from {sorted(SPECS)}")
    path = cache_dir() / f"tiny-{spec}-v{_VERSION}"
    if not (path / "config.json").exists():
        build_tiny_model(path, spec=SPECS[spec])
    return path


def build_tiny_model(path: Path, seed: int = 0, spec: TinySpec = SPECS["llama"]) -> Path:
    """Build the tiny model and tokenizer into `path`, once across processes (kit.atomic.build_locked:
    a temporary folder renamed when complete, under a lock that concurrent test workers wait on)."""
    import torch

    def build(tmp: Path) -> None:
        print(f"model: building the kit's tiny {spec.architecture} model in {path} (once: a tokenizer trained on the "
              f"spot{', then a short pretraining' if spec.pretrain else ''})", flush=True)
        tokenizer = build_tokenizer(tmp)
        model = _build_model(vocab_size=len(tokenizer), tokenizer=tokenizer, seed=seed, spec=spec)
        if spec.pretrain:
            _pretrain(model, tokenizer, chat_corpus(seed=seed))
        model.to(torch.bfloat16).save_pretrained(tmp)

    build_locked(Path(path), build)
    return Path(path)


def build_tokenizer(out: Path):
    import sentencepiece as spm
    from tokenizers import normalizers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    model = io.BytesIO()
    plain = [(p + c).replace("<|im_start|>", "").replace("<|im_end|>", "") for p, c in chat_corpus(64)]
    # No newlines in the training text: "\n" then stays a token of its own (byte fallback), so a prompt
    # ending in "assistant\n" never merges with the completion's first characters.
    lines = [line.replace("\n", " ") for line in _CORPUS * 20 + plain]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=512,
        model_type="bpe",
        byte_fallback=True,  # any text tokenizes, even characters never seen
        split_digits=True,  # one token per digit: arithmetic stays learnable
        control_symbols=SPECIAL_TOKENS,  # llama.cpp parses control tokens out of text; user-defined ones it does not
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,  # llama.cpp keeps runs of spaces; so must the HF side
        unk_id=0, bos_id=1, eos_id=2, pad_id=3,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    (out / "tokenizer.model").write_bytes(model.getvalue())
    # transformers converts the SentencePiece file into a fast tokenizer when it sees no tokenizer.json
    (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    converted = AutoTokenizer.from_pretrained(out).backend_tokenizer
    # llama.cpp's SentencePiece rule: "▁" before every segment between special tokens, spaces as "▁"
    converted.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    converted.pre_tokenizer = None
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=converted,
        bos_token="<s>", eos_token="<|im_end|>", unk_token="<unk>", pad_token="<pad>",
        additional_special_tokens=SPECIAL_TOKENS,
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(out)
    return tokenizer


def _build_model(vocab_size: int, tokenizer, seed: int, spec: TinySpec):
    import torch
    from transformers import GenerationConfig

    torch.manual_seed(seed)
    config_class, model_class = _ARCHITECTURES[spec.architecture]()
    config = config_class(
        vocab_size=vocab_size,
        hidden_size=spec.hidden,
        intermediate_size=spec.intermediate,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    model = model_class(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model


def _pretrain(model, tokenizer, turns: list[tuple[str, str]], steps: int = 300, batch: int = 16,
              lr: float = 1e-3) -> None:
    """A few seconds of next-token training in fp32, so the model's predictions are confident.

    Prompt and completion are tokenized apart and joined, as GRPO sees them: generation starts right
    after the prompt's last token, whatever a tokenizer would merge across that boundary.
    """
    import torch

    sequences = [tokenizer(p, add_special_tokens=False).input_ids + tokenizer(c, add_special_tokens=False).input_ids
                 for p, c in turns]
    encoded = tokenizer.pad({"input_ids": sequences}, return_tensors="pt")
    labels = encoded.input_ids.masked_fill(encoded.attention_mask == 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(steps):
        rows = torch.randint(len(turns), (batch,), generator=generator)
        loss = model(input_ids=encoded.input_ids[rows], attention_mask=encoded.attention_mask[rows],
                     labels=labels[rows]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
